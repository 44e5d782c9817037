// SearchOptions::stage2_gemm1s (tune --stage2-gemm1s): stage 2 searches GEMM2 under stage 1's
// fastest GEMM1 and its nearest near ties, so a GEMM2 that is best only after another, equally
// fast GEMM1 is found. On the cpu family's real spaces and checks with a cost model in which the
// two GEMMs interact (an in-process worker).
#include <algorithm>

#include <gtest/gtest.h>

#include "kernels/cpu/cpu_backend.hpp"
#include "tuner/in_process_worker.hpp"
#include "tuner/search.hpp"
#include "tuner/tuner_test_util.hpp"

namespace moetune::tuner {
namespace {

using testing::fast_options;
using testing::InProcessWorker;
using testing::tiny_task;

/// Two GEMM1 configs (a, b) and two GEMM2 configs (x, y) of the cpu family's block_m 16 group,
/// every pair feasible, and the group's base GEMM2 (which stage 1 runs with), none equal.
struct Four {
  core::KernelConfig a, b, x, y, base;
};
Four four() {
  kernels::cpu::CpuBackend backend;
  core::MoeProblem const p = tiny_task().problem;
  auto ok = [&](core::KernelConfig const& g1, core::KernelConfig const& g2) {
    return backend.can_implement(p, {g1, g2}).ok();
  };
  for (core::GemmSpace const& g : backend.gemm_search_space(p)) {
    if (g.block_m != 16) continue;
    std::vector<core::KernelConfig> g1s, g2s;
    for (core::KernelConfig const& k : g.gemm1) {
      if (ok(k, g.base.gemm2)) g1s.push_back(k);
    }
    for (core::KernelConfig const& k : g.gemm2) {
      if (k != g.base.gemm2 &&
          std::all_of(g1s.begin(), g1s.begin() + std::min<size_t>(2, g1s.size()),
                      [&](auto const& g1) { return ok(g1, k); })) {
        g2s.push_back(k);
      }
    }
    if (g1s.size() >= 2 && g2s.size() >= 2) return {g1s[0], g1s[1], g2s[0], g2s[1], g.base.gemm2};
  }
  ADD_FAILURE() << "no block_m 16 group with two GEMM1 and two GEMM2 configs that pair";
  return {};
}

/// GEMM1 a and b are near-equal (a 0.01 us faster, so stage 1 names a); after a, GEMM2 x is the
/// best (y 4 us behind, beyond the 1% margin); after b, y is the best of all (97 us). Every other
/// GEMM1 costs 5 us more, every other GEMM2 6 us, other block_m groups 20 us.
double interacting(Four const& f, core::MoeConfig const& c) {
  if (c.gemm1.tile.block_m != 16) return 120;
  double t = 100;
  if (c.gemm1 == f.b) {
    t += 0.01;
  } else if (c.gemm1 != f.a) {
    t += 5;
  }
  bool const after_b = c.gemm1 == f.b;
  if (c.gemm2 == f.x) return t;
  if (c.gemm2 == f.y) return t + (after_b ? -3 : 4);
  return t + 6;
}

BucketResult tune(int stage2_gemm1s) {
  Four const f = four();
  InProcessWorker worker([f](core::MoeConfig const& c) { return interacting(f, c); });
  SearchOptions options = fast_options();
  options.stage2_gemm1s = stage2_gemm1s;
  auto store = Store::open(":memory:");
  auto r = tune_bucket(worker, **store, tiny_task(), options);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? *r : BucketResult{};
}

TEST(Stage2Gemm1s, AGemm2BestOnlyAfterANearTiedGemm1IsFoundWithTwo) {
  Four const f = four();
  BucketResult const r = tune(2);
  ASSERT_TRUE(r.ok);
  ASSERT_EQ(r.groups[1].block_m, 16);
  EXPECT_EQ(r.groups[1].gemm1_winner.gemm1, f.a);  // stage 1 names a, b is its near tie
  EXPECT_EQ(core::short_string(r.winner), core::short_string(core::MoeConfig{f.b, f.y}));
  // Stage 2 ran GEMM2 candidates after both GEMM1 configs.
  auto staged_after = [&](core::KernelConfig const& g1) {
    return std::count_if(r.results.begin(), r.results.end(), [&](CandidateResult const& c) {
      return c.stage == 3 && c.config.gemm1 == g1;
    });
  };
  EXPECT_GT(staged_after(f.a), 1);
  EXPECT_GT(staged_after(f.b), 1);
}

TEST(Stage2Gemm1s, WithOneStage2RunsAfterTheFastestOnlyAndMissesIt) {
  // The negative twin (the default): stage 2 after a alone never times y after b.
  Four const f = four();
  BucketResult const r = tune(1);
  ASSERT_TRUE(r.ok);
  EXPECT_NE(core::short_string(r.winner), core::short_string(core::MoeConfig{f.b, f.y}));
  for (CandidateResult const& c : r.results) {
    if (c.stage == 3) EXPECT_EQ(c.config.gemm1, f.a) << c.index;
  }
}

}  // namespace
}  // namespace moetune::tuner
