// Lever batch_invariant through MoeRunner on the cpu backend (docs/levers.md): token rows keep
// their output bits whatever batch they run in (alone, or among other random rows at M = 7, 64,
// 1000, against the same rows in one batch of 4096), every M is served by the backend's
// batch-invariant config (rule batch_invariant; tables, the knob cache and auto bypassed;
// explicit configs refused), and the check catches an M-dependent split-K (its negative twin).
// The GPU twin is tests/python/test_batch_invariant.py.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/temp_dir.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/moe_data.hpp"
#include "moetune/moe_runner.hpp"

namespace moetune {
namespace {

constexpr int64_t kAll = 4096;  ///< the batch every row runs in once; smaller ones are subsets
constexpr int64_t kSubsets[] = {7, 64, 1000};
constexpr int kAlone = 16;  ///< rows also run alone (M = 1)

/// Seed of the generated layers; MOETUNE_TEST_SEED overrides it.
uint64_t test_seed() {
  char const* s = std::getenv("MOETUNE_TEST_SEED");
  return s != nullptr ? std::strtoull(s, nullptr, 10) : 20240611;
}

/// The output bytes of rows `rows` of `pool` run as one batch (in that order), one vector per
/// row, and the Choice that served them.
struct BatchBits {
  std::vector<std::vector<unsigned char>> rows;
  Choice choice;
};

BatchBits run_rows(MoeRunner& runner, kernels::cpu::MoeHostData const& pool,
                   std::vector<int64_t> const& rows, Knobs const& knobs = Knobs::none()) {
  core::MoeProblem const& p = pool.problem;
  size_t const row_bytes = static_cast<size_t>(p.hidden_size * core::dtype_bytes(p.dtype));
  int64_t const m = static_cast<int64_t>(rows.size());
  auto const* x_pool = static_cast<unsigned char const*>(pool.x_data());
  std::vector<unsigned char> x(m * row_bytes), out(m * row_bytes, 0xff);
  std::vector<int32_t> ids(m * p.top_k);
  std::vector<float> weights(ids.size());
  for (int64_t r = 0; r < m; ++r) {
    std::memcpy(x.data() + r * row_bytes, x_pool + rows[r] * row_bytes, row_bytes);
    for (int64_t j = 0; j < p.top_k; ++j) {
      ids[r * p.top_k + j] = pool.routing.topk_ids[rows[r] * p.top_k + j];
      weights[r * p.top_k + j] = pool.routing.topk_weights[rows[r] * p.top_k + j];
    }
  }
  BatchBits bits;
  core::Status const s = runner.run(nullptr, x.data(), ids.data(), weights.data(), pool.w1_data(),
                                    pool.w2_data(), out.data(), m, knobs, &bits.choice);
  EXPECT_TRUE(s.ok()) << "M=" << m << ": " << s.error().to_string();
  for (int64_t r = 0; r < m; ++r) {
    bits.rows.emplace_back(out.begin() + r * row_bytes, out.begin() + (r + 1) * row_bytes);
  }
  return bits;
}

/// "" when equal, else the first differing byte of the row with both values.
std::string first_difference(std::vector<unsigned char> const& got,
                             std::vector<unsigned char> const& want, int elem_bytes) {
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (got[i] == want[i]) continue;
    char buf[160];
    std::snprintf(buf, sizeof buf, "column %zu, byte %zu: 0x%02x, in the batch of %lld 0x%02x",
                  i / elem_bytes, i % elem_bytes, got[i], static_cast<long long>(kAll), want[i]);
    return buf;
  }
  return got.size() == want.size() ? "" : "row sizes differ";
}

/// The batches the rows of the kAll batch also run in: each of its first kAlone rows alone, then
/// M = 7, 64, 1000 distinct rows drawn at random (seeded), in random order.
std::vector<std::vector<int64_t>> subsets(uint64_t seed) {
  std::vector<std::vector<int64_t>> out;
  for (int64_t r = 0; r < kAlone; ++r) out.push_back({r});
  std::mt19937_64 rng(seed);
  std::vector<int64_t> all(kAll);
  std::iota(all.begin(), all.end(), 0);
  for (int64_t m : kSubsets) {
    std::shuffle(all.begin(), all.end(), rng);
    out.emplace_back(all.begin(), all.begin() + m);
  }
  return out;
}

/// Rows of `subset` whose bits differ from the same rows in `full`, and the first one described.
struct Differences {
  int rows = 0;
  std::string first;
};

Differences compare(BatchBits const& bits, std::vector<int64_t> const& subset,
                    BatchBits const& full, int elem_bytes) {
  Differences d;
  for (size_t r = 0; r < subset.size(); ++r) {
    std::string const diff = first_difference(bits.rows[r], full.rows[subset[r]], elem_bytes);
    if (diff.empty()) continue;
    if (d.rows++ == 0) {
      d.first = "row " + std::to_string(subset[r]) + " at position " + std::to_string(r) +
                " of M=" + std::to_string(subset.size()) + " under " +
                core::short_string(bits.choice.config) + ": " + diff;
    }
  }
  return d;
}

/// Runners with the lever on or off (MOETUNE_LEVER_BATCH_INVARIANT in their environment).
class RunnerBatchInvariantBase : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = moetune::testing::unique_temp_dir("runner_batch_invariant"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  core::Result<std::unique_ptr<MoeRunner>> make(core::MoeProblem const& p, bool lever,
                                                std::string const& tables = "") const {
    RunnerOptions o;
    o.tables_dir = tables;
    o.cache_path = dir_ + "/knobs.json";
    o.max_tokens = kAll;
    o.auto_budget_s = 2;
    o.warn = [](std::string const&) {};
    o.levers.env = core::EnvSnapshot{{"MOETUNE_LEVER_BATCH_INVARIANT", lever ? "on" : "off"}};
    return MoeRunner::create(p, "cpu", o);
  }
  /// The layer of `spec` with kAll token rows (inputs and routing) from `seed`.
  static kernels::cpu::MoeHostData layer(char const* spec, uint64_t seed) {
    core::MoeProblem p = *core::parse_problem_spec(spec);
    p.num_tokens = kAll;
    auto data = kernels::cpu::generate_moe_data(p, {}, seed);
    EXPECT_TRUE(data.ok()) << data.error().to_string();
    return std::move(data).value();
  }
  std::string dir_;
};

/// Parameters: a problem spec (M ignored) and an offset of the seed.
class RunnerBatchInvariant : public RunnerBatchInvariantBase,
                             public ::testing::WithParamInterface<std::pair<char const*, int>> {};

TEST_P(RunnerBatchInvariant, TokenRowsKeepTheirBitsInEveryBatch) {
  auto const [spec, seed_offset] = GetParam();
  uint64_t const seed = test_seed() + seed_offset;
  std::string const what = std::string(spec) + " seed " + std::to_string(seed);
  std::printf("lever batch_invariant: %s\n", what.c_str());
  kernels::cpu::MoeHostData const pool = layer(spec, seed);
  auto runner = make(pool.problem, true);
  ASSERT_TRUE(runner.ok()) << runner.error().to_string();
  int const elem_bytes = core::dtype_bytes(pool.problem.dtype);
  std::vector<int64_t> all(kAll);
  std::iota(all.begin(), all.end(), 0);
  BatchBits const full = run_rows(**runner, pool, all);
  EXPECT_EQ(full.choice.rule, ChoiceRule::kBatchInvariant) << what;
  std::set<std::string> configs = {core::short_string(full.choice.config)};
  for (auto const& subset : subsets(seed)) {
    BatchBits const bits = run_rows(**runner, pool, subset);
    EXPECT_EQ(bits.choice.rule, ChoiceRule::kBatchInvariant) << what;
    configs.insert(core::short_string(bits.choice.config));
    Differences const d = compare(bits, subset, full, elem_bytes);
    EXPECT_EQ(d.rows, 0) << what << ": " << d.rows << " of " << subset.size()
                         << " rows differ from their bits in the batch of " << kAll
                         << "; the first: " << d.first;
  }
  // The batches crossed tile shapes (block_m 8 alone, 64 at M = 4096): the claim is not vacuous.
  EXPECT_GE(configs.size(), 2u) << what;
}

INSTANTIATE_TEST_SUITE_P(
    Layers, RunnerBatchInvariant,
    ::testing::Values(std::pair{"E=8,K=128,I=64,topk=2,act=silu,dtype=bf16,arch=cpu", 0},
                      std::pair{"E=8,K=128,I=64,topk=2,act=silu,dtype=fp32,arch=cpu", 1},
                      std::pair{"E=16,K=96,I=72,topk=3,act=relu2,dtype=fp32,arch=cpu", 2}));

/// Negative twin: without the lever, a config that changes with M in split_k (a tuned table or
/// cache entry may hold split_k 2 at small M) gives rows other bits in the small batches than in
/// the large one, and the comparison above sees it, in bf16 as in fp32.
class RunnerBatchInvariantTwin : public RunnerBatchInvariant {};

TEST_P(RunnerBatchInvariantTwin, MDependentSplitKChangesTheBitsTheCheckCompares) {
  auto const [spec, seed_offset] = GetParam();
  uint64_t const seed = test_seed() + seed_offset;
  kernels::cpu::MoeHostData const pool = layer(spec, seed);
  auto runner = make(pool.problem, false);
  ASSERT_TRUE(runner.ok()) << runner.error().to_string();
  core::MoeConfig split = kernels::cpu::cpu_tiled_default_config(pool.problem);
  for (auto* k : {&split.gemm1, &split.gemm2}) {
    k->tile.block_k = 16;
    k->pipeline.split_k = 2;
  }
  std::vector<int64_t> all(kAll);
  std::iota(all.begin(), all.end(), 0);
  BatchBits const full = run_rows(**runner, pool, all);
  EXPECT_EQ(full.choice.rule, ChoiceRule::kDefault);
  std::vector<int64_t> const subset = subsets(seed).back();  // M = 1000
  BatchBits const bits = run_rows(**runner, pool, subset, Knobs::explicit_config(split));
  EXPECT_GT(compare(bits, subset, full, core::dtype_bytes(pool.problem.dtype)).rows, 0)
      << spec << " seed " << seed
      << ": split_k 2 in the batch of 1000 and split_k 1 in the batch of 4096 gave equal bits "
         "for every row, so the comparison would not see an M-dependent split-K";
}

INSTANTIATE_TEST_SUITE_P(
    Layers, RunnerBatchInvariantTwin,
    ::testing::Values(std::pair{"E=8,K=128,I=64,topk=2,act=silu,dtype=bf16,arch=cpu", 0},
                      std::pair{"E=8,K=128,I=64,topk=2,act=silu,dtype=fp32,arch=cpu", 1}));

class RunnerBatchInvariantRules : public RunnerBatchInvariantBase {};

TEST_F(RunnerBatchInvariantRules, TablesCacheAndAutoAreBypassedAndSaySo) {
  // The shipped cpu table serves this shape with the lever off and is bypassed with it on.
  core::MoeProblem const p =
      *core::parse_problem_spec("E=8,K=256,I=128,topk=2,act=silu,dtype=bf16,arch=cpu");
  std::string const tables = std::string(MOETUNE_SOURCE_DIR) + "/tables/cpu";
  auto off = make(p, false, tables);
  ASSERT_TRUE(off.ok()) << off.error().to_string();
  EXPECT_EQ((*off)->choose(16)->rule, ChoiceRule::kTable);
  auto on = make(p, true, tables);
  ASSERT_TRUE(on.ok()) << on.error().to_string();
  EXPECT_TRUE((*on)->levers().fast_paths.batch_invariant);
  for (Knobs const& knobs : {Knobs::none(), Knobs::auto_tune()}) {
    auto c = (*on)->choose(16, knobs);
    ASSERT_TRUE(c.ok()) << c.error().to_string();
    EXPECT_EQ(c->rule, ChoiceRule::kBatchInvariant);
    EXPECT_EQ(std::string(to_string(c->rule)), "batch_invariant");
    core::MoeProblem at16 = (*on)->problem();
    at16.num_tokens = 16;
    EXPECT_EQ(c->config, *kernels::cpu::cpu_tiled_batch_invariant_config(at16));
  }
  EXPECT_EQ((*on)->choose(16, Knobs::auto_tune())->explain,
            "M=16 -> cpu_tiled batch-invariant config (lever batch_invariant: one K order and one "
            "instruction family at every M, no split-K; auto does not tune, the knob cache and "
            "tables are not consulted)");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/knobs.json")) << "auto tuned under the lever";
}

TEST_F(RunnerBatchInvariantRules, ExplicitConfigIsRefusedUnderTheLever) {
  core::MoeProblem const p =
      *core::parse_problem_spec("E=8,K=256,I=128,topk=2,act=silu,dtype=bf16,arch=cpu");
  auto on = make(p, true);
  ASSERT_TRUE(on.ok()) << on.error().to_string();
  core::MoeConfig const c = *kernels::cpu::cpu_tiled_batch_invariant_config(p);
  auto refused = (*on)->choose(16, Knobs::explicit_config(c));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().to_string(),
            "explicit knobs: config " + core::short_string(c) +
                " is refused under lever batch_invariant, which serves the backend's "
                "batch-invariant configs, one kernel family at every M (a config chosen per call "
                "could differ between batches); pass no config (knobs none or auto) or turn the "
                "lever off");
  auto off = make(p, false);
  ASSERT_TRUE(off.ok());
  EXPECT_TRUE((*off)->choose(16, Knobs::explicit_config(c)).ok());
}

}  // namespace
}  // namespace moetune
