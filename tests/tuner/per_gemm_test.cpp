// The per-GEMM search on the cpu backend's real spaces, feasibility and checks, with timings from a
// cost model (an in-process worker) so the best config is known: GEMM1 and GEMM2 winners differ
// when their costs say so, the search finds the best of the whole joint product while checking a
// small part of it, each stage's candidates are precompiled before their checks (by default in
// the background, all of a batch's checks before its timings), and a precompile failure costs
// exactly its own candidate. Near ties between stage candidates: per_gemm_ties_test.cpp.
#include <algorithm>
#include <limits>
#include <memory>
#include <utility>

#include <gtest/gtest.h>

#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/cpu_testbed.hpp"
#include "tuner/cpu_precompile_testbed.hpp"
#include "tuner/in_process_worker.hpp"
#include "tuner/per_gemm_model.hpp"
#include "tuner/search.hpp"
#include "tuner/tuner_test_util.hpp"

namespace moetune::tuner {
namespace {

using testing::cost;
using testing::fast_options;
using testing::InProcessWorker;
using testing::tiny_task;
using testing::tune;

struct Best {
  double joint = std::numeric_limits<double>::infinity();     ///< over every GEMM1 x GEMM2 pair
  double diagonal = std::numeric_limits<double>::infinity();  ///< pairs with equal GEMMs
  int64_t pairs = 0;
};

/// Brute force over the product of the per-GEMM lists: what an exhaustive joint sweep would find.
Best brute_force(core::MoeProblem const& p) {
  kernels::cpu::CpuBackend backend;
  Best best;
  for (core::GemmSpace const& g : backend.gemm_search_space(p)) {
    for (core::KernelConfig const& a : g.gemm1) {
      for (core::KernelConfig const& b : g.gemm2) {
        core::MoeConfig const c{a, b};
        ++best.pairs;
        if (!backend.can_implement(p, c).ok()) continue;
        best.joint = std::min(best.joint, cost(c));
        if (a == b) best.diagonal = std::min(best.diagonal, cost(c));
      }
    }
  }
  return best;
}

TEST(PerGemm, Gemm1AndGemm2WinnersDifferAndMatchTheBestOfTheJointProduct) {
  InProcessWorker worker(cost);
  BucketResult r = tune(worker);
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.per_gemm);
  Best const best = brute_force(tiny_task().problem);
  EXPECT_DOUBLE_EQ(cost(r.winner), best.joint) << core::short_string(r.winner);
  EXPECT_LT(best.joint, best.diagonal);  // only a config with different GEMMs is the best
  EXPECT_NE(r.winner.gemm1, r.winner.gemm2);
  EXPECT_EQ(r.winner.gemm1.tile.block_n, 128);
  EXPECT_EQ(r.winner.gemm2.tile.block_n, 32);
  EXPECT_EQ(r.winner.gemm2.tile.block_k, 256);
  EXPECT_EQ(r.verdict, "challenger_wins");
  ASSERT_EQ(r.groups.size(), 4u);  // block_m 8, 16, 32, 64
  for (GroupResult const& g : r.groups) {
    EXPECT_TRUE(g.ok) << g.block_m;
    EXPECT_EQ(g.winner.gemm1.tile.block_m, g.block_m);
    EXPECT_EQ(g.winner.gemm1.tile.block_n, 128) << g.block_m;  // each group's own optimum
    EXPECT_EQ(g.winner.gemm2.tile.block_n, 32) << g.block_m;
  }
}

TEST(PerGemm, ChecksFarFewerCandidatesThanTheJointProduct) {
  InProcessWorker worker(cost);
  BucketResult r = tune(worker);
  ASSERT_TRUE(r.ok);
  Best const best = brute_force(tiny_task().problem);
  EXPECT_EQ(r.joint_product, best.pairs);
  EXPECT_GT(r.measured, 0);
  EXPECT_LT(r.measured * 10, r.joint_product) << r.measured << " of " << r.joint_product;
  // Each measured candidate was checked once (round 0), the winner once more (recheck).
  EXPECT_EQ(worker.configs_of("check").size(), static_cast<size_t>(r.measured) + 1);
  int gemm1_stage = 0, gemm2_stage = 0;
  for (CandidateResult const& c : r.results) {
    if (c.stage == kAnchorStage) continue;
    // Stage 2g varies GEMM1 at group g's block_m, stage 2g + 1 GEMM2.
    EXPECT_EQ(c.config.gemm1.tile.block_m, r.groups[c.stage / 2].block_m);
    (c.stage % 2 == 0 ? gemm1_stage : gemm2_stage)++;
  }
  EXPECT_GT(gemm1_stage, 0);
  EXPECT_GT(gemm2_stage, 0);
}

TEST(PerGemm, ExhaustiveFindsTheSameBestWithMoreMeasurements) {
  InProcessWorker quick(cost);
  BucketResult tuned = tune(quick);
  SearchOptions options = fast_options();
  options.exhaustive = true;
  InProcessWorker slow(cost);
  BucketResult full = tune(slow, options);
  ASSERT_TRUE(tuned.ok && full.ok);
  EXPECT_EQ(full.winner, tuned.winner);
  EXPECT_GT(full.measured, tuned.measured);  // stage 2 at each group's 3 best GEMM1 configs
  EXPECT_GT(slow.configs_of("time").size(), quick.configs_of("time").size());
}

TEST(PerGemm, EachStageIsPrecompiledBeforeItsChecks) {
  InProcessWorker worker(cost);
  BucketResult r = tune(worker);
  ASSERT_TRUE(r.ok);
  // Stage 1 of every group, then stage 2 of every group; not the anchors, which run before any
  // candidate has passed (each compiles inside its check, within the fail-fast window).
  EXPECT_EQ(r.precompiles, 2);
  // Between two precompiles, the checks are exactly the configs the first one compiled.
  std::vector<core::MoeConfig> compiled, checked;
  int batches = 0;
  auto close_batch = [&] {
    if (batches == 0) return;
    auto sorted = [](std::vector<core::MoeConfig> v) {
      std::sort(v.begin(), v.end(), [](auto const& a, auto const& b) {
        return core::short_string(a) < core::short_string(b);
      });
      return v;
    };
    EXPECT_EQ(sorted(checked), sorted(compiled)) << "batch " << batches;
  };
  size_t last_check = 0;  // the winner's recheck, after every batch
  for (size_t i = 0; i < worker.requests.size(); ++i) {
    if (worker.requests[i].op == "check") last_check = i;
  }
  for (size_t i = 0; i < worker.requests.size(); ++i) {
    Request const& req = worker.requests[i];
    if (req.op == "precompile") {
      close_batch();
      ++batches;
      compiled = req.configs;
      checked.clear();
    } else if (req.op == "check" && i != last_check) {
      checked.push_back(req.config);
    }
  }
  close_batch();
  EXPECT_EQ(batches, 2);
}

/// Per precompile request: how many requests after it are checks before the first timing.
std::vector<size_t> checks_before_first_timing(InProcessWorker const& worker) {
  std::vector<size_t> out;
  for (size_t i = 0; i < worker.requests.size(); ++i) {
    if (worker.requests[i].op != "precompile") continue;
    size_t checks = 0;
    for (size_t j = i + 1; j < worker.requests.size() && worker.requests[j].op != "time"; ++j) {
      checks += worker.requests[j].op == "check";
    }
    out.push_back(checks);
  }
  return out;
}

TEST(PerGemm, WithABackgroundCompileEveryCheckOfABatchComesBeforeItsTimings) {
  InProcessWorker worker(cost);
  BucketResult r = tune(worker);
  ASSERT_TRUE(r.ok);
  std::vector<size_t> batch_sizes;
  for (Request const& req : worker.requests) {
    if (req.op != "precompile") continue;
    EXPECT_TRUE(req.background);
    batch_sizes.push_back(req.configs.size());
  }
  ASSERT_EQ(batch_sizes.size(), 2u);
  // Every candidate of this model passes, so all of a batch's checks precede its first timing.
  EXPECT_EQ(checks_before_first_timing(worker), batch_sizes);

  SearchOptions in_order = fast_options();
  in_order.background_compile = false;
  InProcessWorker sync(cost);
  BucketResult s = tune(sync, in_order);
  ASSERT_TRUE(s.ok);
  for (Request const& req : sync.requests) EXPECT_FALSE(req.background);
  EXPECT_EQ(checks_before_first_timing(sync), (std::vector<size_t>{1, 1}));  // check, time, ...
  // The order of the requests is all that differs.
  EXPECT_EQ(s.winner, r.winner);
  EXPECT_EQ(s.measured, r.measured);
  EXPECT_EQ(s.outcomes, r.outcomes);
  EXPECT_EQ(sync.configs_of("check").size(), worker.configs_of("check").size());
  EXPECT_EQ(sync.configs_of("time").size(), worker.configs_of("time").size());
}

/// The search-order index of `config` among r's candidates (its last entry), or -1.
int index_of(BucketResult const& r, core::MoeConfig const& config) {
  int index = -1;
  for (CandidateResult const& c : r.results) {
    if (c.config == config) index = c.index;
  }
  return index;
}

/// The cpu testbed, except that precompile fails (as NVRTC would) for one config.
class FailingCompileTestbed : public testing::CpuPrecompileTestbed {
 public:
  explicit FailingCompileTestbed(core::MoeConfig bad) : bad_(bad) {}
  std::vector<core::Status> precompile(std::vector<core::MoeConfig> const& configs) override {
    ++calls;
    std::vector<core::Status> out;
    for (core::MoeConfig const& c : configs) {
      out.push_back(c == bad_ ? core::Status(core::make_error(core::ErrorCode::kUnsupported, "jit",
                                                              "NVRTC could not compile: test"))
                              : core::Status::Ok());
    }
    return out;
  }
  int calls = 0;

 private:
  core::MoeConfig bad_;
};

TEST(PerGemm, APrecompileFailureCostsOnlyItsCandidate) {
  InProcessWorker clean(cost);
  BucketResult first = tune(clean);
  ASSERT_TRUE(first.ok);
  auto bed = std::make_unique<FailingCompileTestbed>(first.winner);
  FailingCompileTestbed* raw = bed.get();
  InProcessWorker worker(cost, std::move(bed));
  BucketResult r = tune(worker);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(raw->calls, 2);
  auto it = std::find_if(r.results.begin(), r.results.end(),
                         [&](CandidateResult const& c) { return c.config == first.winner; });
  ASSERT_NE(it, r.results.end());
  EXPECT_EQ(it->outcome, Outcome::kCompileFailed) << it->reason;
  EXPECT_NE(it->reason.find("NVRTC could not compile"), std::string::npos) << it->reason;
  auto checked = worker.configs_of("check");
  EXPECT_EQ(std::count(checked.begin(), checked.end(), first.winner), 0);  // never run
  EXPECT_NE(r.winner, first.winner);
  EXPECT_EQ(r.outcomes.at(Outcome::kCompileFailed), 1);
}

TEST(PerGemm, AnInjectedCompileFaultIsAnsweredByThePrecompile) {
  InProcessWorker clean(cost);
  BucketResult first = tune(clean);
  ASSERT_TRUE(first.ok);
  int const index = index_of(first, first.winner);
  ASSERT_GT(index, 0);
  SearchOptions options = fast_options();
  options.faults = *parse_fault_plan("compile@" + std::to_string(index));
  InProcessWorker worker(cost);
  BucketResult r = tune(worker, options);
  ASSERT_TRUE(r.ok);
  ASSERT_LT(static_cast<size_t>(index), r.results.size());
  EXPECT_EQ(r.results[index].config, first.winner);  // same model, same order
  EXPECT_EQ(r.results[index].outcome, Outcome::kCompileFailed);
  EXPECT_NE(r.results[index].reason.find("injected compile fault"), std::string::npos);
  auto checked = worker.configs_of("check");
  EXPECT_EQ(std::count(checked.begin(), checked.end(), first.winner), 0);
  EXPECT_NE(r.winner, first.winner);
}

TEST(PerGemm, WrongAndNanOutputsAreCaughtByTheGateAndNeverWin) {
  InProcessWorker clean(cost);
  BucketResult first = tune(clean);
  ASSERT_TRUE(first.ok);
  int const index = index_of(first, first.winner);
  for (char const* kind : {"wrong", "nan"}) {
    SCOPED_TRACE(kind);
    SearchOptions options = fast_options();
    options.faults = *parse_fault_plan(std::string(kind) + "@" + std::to_string(index));
    InProcessWorker worker(cost);
    BucketResult r = tune(worker, options);
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.results[index].outcome, Outcome::kWrongResult);
    // The gate saw the corrupted output itself: first bad element 0.
    EXPECT_NE(r.results[index].reason.find("first bad index 0"), std::string::npos)
        << r.results[index].reason;
    EXPECT_NE(r.winner, first.winner);
  }
}

}  // namespace
}  // namespace moetune::tuner
