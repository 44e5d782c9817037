// Lint: each finding class is caught, each with a negative twin, and a clean table is quiet.
#include <gtest/gtest.h>

#include "temp_dir.hpp"

#include <algorithm>
#include <filesystem>
#include <random>
#include <set>

#include "core/atomic_file.hpp"
#include "core/lint.hpp"
#include "core/resolver.hpp"

namespace moetune::core {
namespace {

namespace fs = std::filesystem;

MoeConfig bm(int block_m) {
  KernelConfig k;
  k.tile.block_m = block_m;
  return uniform_config(k);
}

MoeConfig default_for(MoeProblem const& p) { return bm(p.num_tokens <= 32 ? 16 : 64); }

Status can_produce(std::string const&, MoeProblem const&, MoeConfig const& c) {
  if (c.gemm1.tile.block_m > 128) {
    return make_error(ErrorCode::kUnsupported, "", "block_m > 128 is outside the search space");
  }
  return Status::Ok();
}

Source beats_default() {
  Source s;
  s.kind = "measured";
  s.numbers = {{"time_us", 10.0}, {"default_us", 12.0}};
  return s;
}

Table clean_table() {
  Table t;
  t.key = TableKey{.num_experts = 128,
                   .intermediate_size = 768,
                   .hidden_size = 2048,
                   .top_k = 8,
                   .activation = Activation::kSiluGated,
                   .dtype = DType::kBf16,
                   .dtype_tag = "",
                   .block_shape = std::nullopt,
                   .device_name = "NVIDIA_H200",
                   .family = "sm90_gather",
                   .family_version = 1,
                   .toolchain = ""};
  t.has_manifest = true;
  t.rows[1].config = bm(16);   // equal to the default
  t.rows[16].config = bm(32);  // differs, measured to win
  t.rows[16].source = beats_default();
  t.rows[256].config = bm(128);
  return t;
}

std::vector<LintFinding> lint(Table const& t, LintOptions o = {}) {
  return lint_table(t, "f.json", "sm90_gather", default_for, can_produce, o);
}

TEST(Lint, CleanTableIsQuiet) { EXPECT_TRUE(lint(clean_table()).empty()); }

TEST(Lint, AnFp8KeysProblemCarriesItsQuant) {
  TableKey key;
  key.num_experts = 128;
  key.intermediate_size = 768;
  key.hidden_size = 2048;
  key.top_k = 8;
  EXPECT_EQ(problem_for_key(key, 16).quant, Quant::kNone);
  key.dtype_tag = "fp8_w8a8";
  EXPECT_EQ(problem_for_key(key, 16).quant, Quant::kFp8Tensor);
  key.block_shape = std::pair{128, 128};
  MoeProblem const p = problem_for_key(key, 16);
  EXPECT_EQ(p.quant, Quant::kFp8Block);
  EXPECT_TRUE(check_key_matches(key, p, "t").ok());  // the problem takes its own table
}

TEST(Lint, CatchesATinyMRowThatDiffersFromTheDefaultUnmeasured) {
  Table t = clean_table();
  t.rows[16].source->numbers["time_us"] = 13.0;  // negative twin: now slower than the default
  auto f = lint(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, LintKind::kTinyMShadow);
  EXPECT_EQ(f[0].bucket, 16);
  t.rows[16].source.reset();
  EXPECT_EQ(lint(t).size(), 1u);
  // A row above the tiny-M range is not a tiny-M row.
  Table big = clean_table();
  big.rows[256].source.reset();
  EXPECT_TRUE(lint(big).empty());
}

TEST(Lint, CatchesKeysShadowedByThePolicies) {
  Table t = clean_table();
  t.policy.tiny_m_threshold = 8;  // M <= 8 never reaches key 1
  auto f = lint(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, LintKind::kUnreachableKey);
  EXPECT_EQ(f[0].bucket, 1);
  EXPECT_EQ(f[0].message,
            "no M in [1, 256] resolves to key 1: the tiny-M gate or the beyond-range policy takes "
            "every M nearest to it; remove the row or relax the policy");
  Table u = clean_table();
  u.policy.tiny_m_threshold = 7;  // twin: key 1 still serves M = 8
  EXPECT_TRUE(lint(u).empty());
}

TEST(Lint, UnreachableKeysAgreeWithTheResolver) {
  Table t = clean_table();
  t.rows[20].config = bm(16);
  t.rows[20].source = beats_default();
  t.rows[4096].config = bm(64);
  t.policy.tiny_m_threshold = 18;
  t.policy.beyond_range_factor = 1.0;
  int64_t const max_m = 5000;
  std::set<int64_t> used;
  for (int64_t m = 1; m <= max_m; ++m) {
    auto r = resolve(t, m, [](int64_t) { return MoeConfig{}; });
    if (r.key) used.insert(*r.key);
  }
  std::vector<int64_t> expected;
  for (auto const& [k, row] : t.rows) {
    if (!used.count(k)) expected.push_back(k);
  }
  EXPECT_EQ(unreachable_keys(t, max_m), expected);
  EXPECT_EQ(expected, (std::vector<int64_t>{1, 16}));
}

// The boundaries of the tiny-M rule, one test each, so a rule that is off by one at any of them
// (a tie counted as a win, the last tiny bucket skipped, the policy's threshold ignored) fails.
TEST(Lint, ATimeEqualToTheDefaultIsNoWin) {
  Table t = clean_table();
  t.rows[16].source->numbers = {{"time_us", 12.0}, {"default_us", 12.0}};
  auto f = lint(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, LintKind::kTinyMShadow);
  EXPECT_EQ(f[0].bucket, 16);
  EXPECT_FALSE(source_beats_default(t.rows[16].source));
  t.rows[16].source->numbers["time_us"] = 11.999;  // twin: a strict win is quiet
  EXPECT_TRUE(lint(t).empty());
}

TEST(Lint, TheLastTinyBucketIsATinyMRow) {
  Table t = clean_table();
  t.rows[32].config = bm(128);  // differs from the default bm(16) at M = 32, unmeasured
  auto f = lint(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, LintKind::kTinyMShadow);
  EXPECT_EQ(f[0].bucket, 32);
  EXPECT_TRUE(lint(t, LintOptions{.max_m = 0, .tiny_m_bucket = 31}).empty());  // twin
}

TEST(Lint, ThePolicysTinyMThresholdWidensTheTinyRange) {
  Table t = clean_table();
  t.rows[48].config = bm(128);  // above tiny_m_bucket 32, but under the policy's threshold 50
  t.policy.tiny_m_threshold = 50;
  std::vector<int64_t> shadowed;
  for (auto const& f : lint(t)) {
    if (f.kind == LintKind::kTinyMShadow) shadowed.push_back(*f.bucket);
  }
  EXPECT_EQ(shadowed, (std::vector<int64_t>{48}));  // (1 equals the default, 16 is measured)
  t.policy.tiny_m_threshold = 47;                   // twin: 48 is no longer a tiny-M row
  for (auto const& f : lint(t)) EXPECT_NE(f.kind, LintKind::kTinyMShadow) << f.to_string();
}

TEST(Lint, UnreachableKeysAgreeWithTheResolverOnRandomTablesInFileOrder) {
  uint64_t const seed = 20261208;
  std::mt19937_64 gen(seed);
  for (int trial = 0; trial < 400; ++trial) {
    std::set<int64_t> keys;
    int const n = 1 + static_cast<int>(gen() % 8);
    while (static_cast<int>(keys.size()) < n) keys.insert(1 + static_cast<int64_t>(gen() % 60));
    Table t;
    for (int64_t k : keys) t.rows[k].config = bm(16);
    if (gen() % 2 == 0) {
      std::vector<int64_t> order(keys.begin(), keys.end());
      std::shuffle(order.begin(), order.end(), gen);
      t.key_order = order;
    }
    if (gen() % 2 == 0) t.policy.tiny_m_threshold = static_cast<int64_t>(gen() % 40);
    if (gen() % 3 == 0) t.policy.beyond_range_factor = 0.5 + static_cast<double>(gen() % 4) / 2;
    int64_t const max_m = 1 + static_cast<int64_t>(gen() % 90);
    std::set<int64_t> used;
    for (int64_t m = 1; m <= max_m; ++m) {
      auto r = resolve(t, m, [](int64_t) { return MoeConfig{}; });
      if (r.key) used.insert(*r.key);
    }
    std::vector<int64_t> expected;
    for (int64_t k : keys) {
      if (!used.count(k)) expected.push_back(k);
    }
    ASSERT_EQ(unreachable_keys(t, max_m), expected) << "seed " << seed << " trial " << trial;
  }
}

TEST(Lint, CatchesRowsTheFamilyCannotProduce) {
  Table t = clean_table();
  t.rows[256].config = bm(256);
  auto f = lint(t);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, LintKind::kFamilyCannotProduce);
  EXPECT_EQ(f[0].bucket, 256);
  EXPECT_NE(f[0].message.find("block_m > 128 is outside the search space"), std::string::npos);
}

TEST(Lint, CatchesManifestMismatchesInADirectory) {
  fs::path const dir = moetune::testing::unique_temp_dir("lint_dir");
  auto path = save_table(clean_table(), dir.string());
  ASSERT_TRUE(path.ok());
  auto clean = lint_tables(dir.string(), std::nullopt, default_for, can_produce);
  ASSERT_TRUE(clean.ok());
  EXPECT_TRUE(clean->empty());
  // Negative twin: one row dropped from the vLLM file only.
  Table vllm_only = clean_table();
  vllm_only.rows.erase(256);
  ASSERT_TRUE(write_file_atomic(*path, format_vllm_table(vllm_only)).ok());
  auto f = lint_tables(dir.string(), std::nullopt, default_for, can_produce);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->size(), 1u);
  EXPECT_EQ(f->at(0).kind, LintKind::kManifestMismatch);
  EXPECT_NE(f->at(0).message.find("rows[256] is in the manifest but not in the vLLM file"),
            std::string::npos);
  // An orphan manifest is a finding too.
  fs::remove(*path);
  auto orphan = lint_tables(dir.string(), std::nullopt, default_for, can_produce);
  ASSERT_EQ(orphan->size(), 1u);
  EXPECT_NE(orphan->at(0).message.find("manifest without its vLLM file"), std::string::npos);
}

}  // namespace
}  // namespace moetune::core
