// Routing: seeded determinism, distinct ids per token, and the shape of each profile.
#include <gtest/gtest.h>

#include "temp_dir.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/json_text.hpp"
#include "core/routing.hpp"

namespace moetune::core {
namespace {

std::vector<int64_t> counts(Routing const& r, int64_t e) {
  std::vector<int64_t> c(e, 0);
  for (int32_t id : r.topk_ids) ++c[id];
  return c;
}

void expect_distinct_per_token(Routing const& r) {
  for (int64_t t = 0; t < r.num_tokens; ++t) {
    std::set<int32_t> ids(r.topk_ids.begin() + t * r.top_k, r.topk_ids.begin() + (t + 1) * r.top_k);
    ASSERT_EQ(static_cast<int64_t>(ids.size()), r.top_k) << "token " << t;
  }
}

TEST(Routing, SameSeedGivesBitwiseTheSameRouting) {
  for (char const* spec : {"uniform,seed=7", "balanced", "block_permutation:block=4,seed=3",
                           "zipf:s=1.5,seed=9", "single_expert,seed=2"}) {
    auto p = parse_routing(spec);
    ASSERT_TRUE(p.ok()) << spec;
    auto a = generate_routing(*p, 100, 64, 6);
    auto b = generate_routing(*p, 100, 64, 6);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->topk_ids, b->topk_ids) << spec;
    EXPECT_EQ(a->topk_weights, b->topk_weights) << spec;
    expect_distinct_per_token(*a);
  }
  auto const a = generate_routing(*parse_routing("uniform,seed=1"), 50, 64, 4);
  auto const c = generate_routing(*parse_routing("uniform,seed=2"), 50, 64, 4);
  EXPECT_NE(a->topk_ids, c->topk_ids);  // negative twin: another seed differs
}

TEST(Routing, UniformPicksTheTopKOfTheSoftmaxAndKeepsItsProbabilities) {
  auto r = generate_routing(RoutingProfile{}, 200, 16, 4);
  ASSERT_TRUE(r.ok());
  for (int64_t t = 0; t < 200; ++t) {
    float sum = 0;
    for (int j = 0; j < 4; ++j) {
      float const w = r->topk_weights[t * 4 + j];
      EXPECT_GT(w, 0.f);
      if (j > 0) {
        EXPECT_GE(r->topk_weights[t * 4 + j - 1], w);  // descending
      }
      sum += w;
    }
    EXPECT_LT(sum, 1.0f);  // not renormalised
  }
  EXPECT_EQ(experts_hit(*r, 16), 16);
}

TEST(Routing, BalancedGivesEveryExpertTheSameLoadWithinOne) {
  auto r = generate_routing(*parse_routing("balanced"), 37, 16, 3);
  ASSERT_TRUE(r.ok());
  auto c = counts(*r, 16);
  auto [lo, hi] = std::minmax_element(c.begin(), c.end());
  EXPECT_LE(*hi - *lo, 1);
  expect_distinct_per_token(*r);
}

TEST(Routing, ZipfSkewsTowardsTheFirstExperts) {
  auto r = generate_routing(*parse_routing("zipf:s=1.2,seed=5"), 2000, 64, 4);
  ASSERT_TRUE(r.ok());
  auto c = counts(*r, 64);
  EXPECT_GT(c[0], 3 * c[63]);
  EXPECT_GT(c[0], c[10]);
  expect_distinct_per_token(*r);
}

TEST(Routing, BlockPermutationSharesTheExpertSetWithinABlock) {
  auto r = generate_routing(*parse_routing("block_permutation:block=8,seed=1"), 32, 64, 4);
  ASSERT_TRUE(r.ok());
  for (int64_t t = 1; t < 8; ++t) {
    EXPECT_TRUE(
        std::equal(r->topk_ids.begin(), r->topk_ids.begin() + 4, r->topk_ids.begin() + t * 4));
  }
  EXPECT_FALSE(
      std::equal(r->topk_ids.begin(), r->topk_ids.begin() + 4, r->topk_ids.begin() + 8 * 4));
}

TEST(Routing, SingleExpertSendsEveryFirstChoiceToExpertZero) {
  auto r = generate_routing(*parse_routing("single_expert"), 20, 8, 2);
  ASSERT_TRUE(r.ok());
  for (int64_t t = 0; t < 20; ++t) EXPECT_EQ(r->topk_ids[t * 2], 0);
  expect_distinct_per_token(*r);
}

TEST(Routing, TraceReadsPlainAndJsonRowsAndRejectsBadIds) {
  auto const dir = std::filesystem::path(moetune::testing::unique_temp_dir("trace"));
  std::string const plain = (dir / "moetune_trace_plain.txt").string();
  std::string const json = (dir / "moetune_trace.json").string();
  std::ofstream(plain) << "0 3\n5 1\n";
  std::ofstream(json) << "[[0, 3], [5, 1]]";
  for (auto const& path : {plain, json}) {
    auto r = generate_routing(*parse_routing("trace:" + path), 3, 8, 2);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->topk_ids, (std::vector<int32_t>{0, 3, 5, 1, 0, 3}));
  }
  auto bad = generate_routing(*parse_routing("trace:" + plain), 3, 4, 2);  // id 5 >= E=4
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kMismatch);
}

TEST(Routing, SpecFormatParseRoundTrips) {
  for (RoutingProfile const& r :
       {RoutingProfile{},
        RoutingProfile{.kind = RoutingKind::kZipf, .seed = 3, .zipf_s = 0.7, .trace_path = ""},
        RoutingProfile{
            .kind = RoutingKind::kBlockPermutation, .seed = 1, .block = 5, .trace_path = ""},
        RoutingProfile{.kind = RoutingKind::kTrace, .seed = 4, .trace_path = "/a/b.txt"}}) {
    auto back = parse_routing(format_routing(r));
    ASSERT_TRUE(back.ok()) << format_routing(r);
    EXPECT_EQ(*back, r) << format_routing(r);
  }
  auto typo = parse_routing("unifrom");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("did you mean 'uniform'?"), std::string::npos);
}

TEST(Routing, RejectsTopKAboveExperts) {
  EXPECT_FALSE(generate_routing(RoutingProfile{}, 4, 4, 5).ok());
  EXPECT_TRUE(generate_routing(RoutingProfile{}, 0, 4, 4)->topk_ids.empty());
}

// Issue 57: with s above ~1030 every weight but the first underflows to 0, and the sampler
// walked below index 0 and wrote there (heap corruption). Now it takes the best-ranked expert
// left, the distribution's limit as s grows: ids 0, 1, ..., top_k-1 for every token.
TEST(Routing, ZipfWithAHugeExponentPicksTheBestRankedExpertsInOrder) {
  // A moderate s keeps its seeded draws (these counts are the sampler's before the fix).
  auto mild = generate_routing(*parse_routing("zipf:s=1.2,seed=5"), 200, 16, 4);
  ASSERT_TRUE(mild.ok());
  EXPECT_EQ(counts(*mild, 16), std::vector<int64_t>({180, 130, 90, 78, 51, 44, 36, 37, 33, 18, 13,
                                                     20, 22, 21, 16, 11}));
  for (double s : {1100.0, 1e308}) {
    RoutingProfile const r{.kind = RoutingKind::kZipf, .seed = 7, .zipf_s = s, .trace_path = ""};
    auto routing = generate_routing(r, 64, 8, 8);
    ASSERT_TRUE(routing.ok()) << routing.error().to_string();
    expect_distinct_per_token(*routing);
    for (int64_t t = 0; t < 64; ++t) {
      for (int64_t j = 0; j < 8; ++j) ASSERT_EQ(routing->topk_ids[t * 8 + j], j) << "s=" << s;
    }
  }
}

// One validation for the CLI's spec and the recipe's JSON: a negative, infinite or NaN zipf_s
// and a block below 1 are refused by both, naming the value.
TEST(Routing, SpecAndJsonShareOneValidation) {
  for (char const* spec : {"zipf:s=-1", "zipf:s=inf", "zipf:s=nan", "block_permutation:block=0"}) {
    EXPECT_FALSE(parse_routing(spec).ok()) << spec;
  }
  auto neg = parse_routing_profile_json(R"({"kind": "zipf", "zipf_s": -2})", "r.json");
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.error().to_string(),
            "r.json: zipf_s = -2 is out of range; expected a finite number >= 0 (1.2 is typical)");
  EXPECT_FALSE(parse_routing_profile_json(R"({"kind": "zipf", "zipf_s": 1e400})", "r.json").ok());
  EXPECT_FALSE(parse_routing_profile_json(R"({"block": 0})", "r.json").ok());
  EXPECT_TRUE(parse_routing_profile_json(R"({"kind": "zipf", "zipf_s": 2000})", "r.json").ok());
  EXPECT_FALSE(validate(RoutingProfile{.zipf_s = -0.5}).ok());
  EXPECT_FALSE(
      generate_routing(RoutingProfile{.kind = RoutingKind::kZipf, .zipf_s = -1}, 4, 8, 2).ok());
}

}  // namespace
}  // namespace moetune::core
