// Resolver: vLLM's nearest-key rule, the policies, totality, explain.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>

#include "core/resolver.hpp"

namespace moetune::core {
namespace {

MoeConfig config_with_block_m(int bm) {
  KernelConfig k;
  k.tile.block_m = bm;
  return uniform_config(k);
}

Table table_with_keys(std::vector<int64_t> const& keys) {
  Table t;
  for (int64_t k : keys) t.rows[k].config = config_with_block_m(16);
  return t;
}

MoeConfig default_fn(int64_t) { return config_with_block_m(256); }

/// vLLM's rule as written in Python: min(keys, key=lambda x: abs(x - M)), keys in file order.
int64_t brute_force_vllm(std::vector<int64_t> const& keys_in_file_order, int64_t m) {
  int64_t best = keys_in_file_order.front();
  for (int64_t k : keys_in_file_order) {
    if (std::llabs(k - m) < std::llabs(best - m)) best = k;  // strict: the first listed wins
  }
  return best;
}

TEST(Resolver, TiesGoToTheSmallerKey) {
  Table const t = table_with_keys({16, 32});
  EXPECT_EQ(nearest_key(t, 24), 16);
  EXPECT_EQ(nearest_key(t, 25), 32);
  Resolution const r = resolve(t, 24, default_fn);
  EXPECT_EQ(r.key, 16);
  EXPECT_EQ(r.rule, Rule::kNearestKey);
  EXPECT_EQ(r.explain,
            "M=24 -> key 16 (nearest key, |16-24|=8, ties to the smaller key; row has no source "
            "(plain vLLM file))");
}

TEST(Resolver, AgreesWithBruteForceVllmOnRandomTables) {
  uint64_t const seed = 20260919;
  std::mt19937_64 gen(seed);
  for (int trial = 0; trial < 300; ++trial) {
    std::set<int64_t> keys;
    int const n = 1 + static_cast<int>(gen() % 12);
    while (static_cast<int>(keys.size()) < n) keys.insert(1 + static_cast<int64_t>(gen() % 5000));
    std::vector<int64_t> const sorted(keys.begin(), keys.end());
    Table const t = table_with_keys(sorted);
    for (int q = 0; q < 50; ++q) {
      int64_t const m = static_cast<int64_t>(gen() % 6000);
      Resolution const r = resolve(t, m, default_fn);
      ASSERT_TRUE(r.key.has_value());
      ASSERT_EQ(*r.key, brute_force_vllm(sorted, m)) << "seed " << seed << " M=" << m;
      EXPECT_EQ(r.rule, *r.key == m ? Rule::kExactKey : Rule::kNearestKey);
    }
  }
}

TEST(Resolver, AgreesWithBruteForceVllmOnShuffledKeysInFileOrder) {
  uint64_t const seed = 20261207;
  std::mt19937_64 gen(seed);
  for (int trial = 0; trial < 300; ++trial) {
    std::set<int64_t> keys;
    int const n = 2 + static_cast<int>(gen() % 11);
    // Even keys only, so midpoints are whole numbers and ties happen often.
    while (static_cast<int>(keys.size()) < n) {
      keys.insert(2 + 2 * static_cast<int64_t>(gen() % 200));
    }
    std::vector<int64_t> order(keys.begin(), keys.end());
    std::shuffle(order.begin(), order.end(), gen);
    Table t = table_with_keys(order);
    t.key_order = order;
    for (int64_t m = 0; m < 420; ++m) {
      ASSERT_EQ(nearest_key(t, m), brute_force_vllm(order, m)) << "seed " << seed << " M=" << m;
    }
  }
}

TEST(Resolver, TiesGoToTheKeyFirstInTheFile) {
  Table t = table_with_keys({256, 512});
  t.key_order = {512, 256};
  EXPECT_EQ(nearest_key(t, 384), 512);
  EXPECT_EQ(nearest_key(t, 383), 256);
  EXPECT_EQ(resolve(t, 384, default_fn).explain,
            "M=384 -> key 512 (nearest key, |512-384|=128, ties to the key listed first in the "
            "file; row has no source (plain vLLM file))");
  t.rows[128].config = config_with_block_m(16);  // a row added after loading comes last
  EXPECT_EQ(keys_in_file_order(t), (std::vector<int64_t>{512, 256, 128}));
}

TEST(Resolver, IsTotalForEveryM) {
  Table const empty;
  Resolution const r = resolve(empty, 5, default_fn);
  EXPECT_EQ(r.rule, Rule::kEmptyTable);
  EXPECT_EQ(r.config, default_fn(5));
  EXPECT_EQ(r.source->kind, "default");
  Table const t = table_with_keys({1, 4096});
  for (int64_t m : {int64_t{0}, int64_t{1}, int64_t{2049}, kMaxTokens, int64_t{-3}}) {
    EXPECT_TRUE(resolve(t, m, default_fn).key.has_value()) << m;
  }
}

TEST(Resolver, TinyMGateSendsSmallMToTheDefault) {
  Table t = table_with_keys({16, 64});
  t.policy.tiny_m_threshold = 8;
  Resolution const tiny = resolve(t, 8, default_fn);
  EXPECT_EQ(tiny.rule, Rule::kTinyMGate);
  EXPECT_FALSE(tiny.key.has_value());
  EXPECT_EQ(tiny.config, default_fn(8));
  EXPECT_EQ(tiny.explain, "M=8 -> default config (tiny_m_gate: M <= tiny_m_threshold 8)");
  EXPECT_EQ(resolve(t, 9, default_fn).key, 16);  // negative twin: one above the gate
}

TEST(Resolver, BeyondRangeFallsBackToTheDefault) {
  Table t = table_with_keys({16, 64});
  t.policy.beyond_range_factor = 2.0;
  EXPECT_EQ(resolve(t, 128, default_fn).key, 64);
  Resolution const far = resolve(t, 129, default_fn);
  EXPECT_EQ(far.rule, Rule::kBeyondRange);
  EXPECT_EQ(far.explain, "M=129 -> default config (beyond_range: M > 2 x largest key 64)");
}

TEST(Resolver, ExactKeyExplainsTheSource) {
  Table t = table_with_keys({16});
  Source s;
  s.kind = "measured";
  s.device = "NVIDIA H200";
  s.date = "2026-09-19";
  t.rows[16].source = s;
  Resolution const r = resolve(t, 16, default_fn);
  EXPECT_EQ(r.rule, Rule::kExactKey);
  EXPECT_EQ(r.explain,
            "M=16 -> key 16 (exact key; row source: measured on NVIDIA H200 2026-09-19)");
}

}  // namespace
}  // namespace moetune::core
