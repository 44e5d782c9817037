// bench statistics, CSV, arm specs and the worker protocol, with no process started.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "bench/arm.hpp"
#include "bench/bench_stats.hpp"
#include "bench/ceilings.hpp"
#include "bench/csv.hpp"

namespace moetune::bench {
namespace {

std::vector<double> noisy(double centre, double spread, uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(centre, spread);
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(d(rng));
  return out;
}

TEST(BenchStats, SummaryHoldsMedianPercentilesAndASeededInterval) {
  std::vector<double> s = {10, 11, 12, 13, 14, 15, 16, 17, 18, 100};
  SampleSummary const a = summarize(s, 7);
  SampleSummary const b = summarize(s, 7);
  EXPECT_DOUBLE_EQ(a.median_us, 14.5);
  EXPECT_DOUBLE_EQ(a.p10_us, 11);
  EXPECT_DOUBLE_EQ(a.p90_us, 18);
  EXPECT_LE(a.ci_low_us, a.median_us);
  EXPECT_GE(a.ci_high_us, a.median_us);
  EXPECT_EQ(a.ci_low_us, b.ci_low_us);  // same seed, same interval
  EXPECT_EQ(a.ci_high_us, b.ci_high_us);
  EXPECT_EQ(a.samples, 10);
}

TEST(BenchStats, IdenticalArmsWithNoiseAreNoDifference) {
  std::vector<RoundSamples> rounds;
  for (int r = 0; r < 6; ++r) {
    rounds.push_back({noisy(100, 5, 2 * r, 15), noisy(100, 5, 2 * r + 1, 15)});
  }
  AbDelta const d = compare_arms(rounds, 1, 0.01);
  EXPECT_EQ(d.verdict, AbVerdict::kNoDifference)
      << d.delta << " [" << d.ci_low << ", " << d.ci_high << "]";
  EXPECT_LE(d.ci_low, 0);
  EXPECT_GE(d.ci_high, 0);
}

TEST(BenchStats, AClearShiftIsFasterAndItsMirrorSlower) {
  std::vector<RoundSamples> faster, slower;
  for (int r = 0; r < 5; ++r) {
    auto a = noisy(100, 1, 3 * r, 15), b = noisy(80, 1, 3 * r + 1, 15);
    faster.push_back({a, b});
    slower.push_back({b, a});
  }
  AbDelta const f = compare_arms(faster, 1, 0.01);
  EXPECT_EQ(f.verdict, AbVerdict::kBFaster);
  EXPECT_NEAR(f.delta, -0.2, 0.02);
  EXPECT_LT(f.ci_high, -0.01);
  EXPECT_EQ(compare_arms(slower, 1, 0.01).verdict, AbVerdict::kBSlower);
}

TEST(BenchStats, AShiftInsideTheMarginIsNoDifference) {
  std::vector<RoundSamples> rounds;
  for (int r = 0; r < 5; ++r)
    rounds.push_back({noisy(100, 0.1, r, 15), noisy(99.5, 0.1, r + 9, 15)});
  AbDelta const d = compare_arms(rounds, 1, 0.01);
  EXPECT_LT(d.ci_high, 0);                         // the interval excludes 0 ...
  EXPECT_EQ(d.verdict, AbVerdict::kNoDifference);  // ... but a 0.5% shift does not clear 1%
}

TEST(BenchStats, OneRoundNeverGivesAVerdict) {
  AbDelta const d = compare_arms({{{100, 100, 100}, {50, 50, 50}}}, 1, 0.01);
  EXPECT_EQ(d.rounds, 1);
  EXPECT_EQ(d.verdict, AbVerdict::kNoDifference);
}

TEST(BenchCeilings, FloorFollowsTheKernelBenchmarksFormula) {
  core::MoeProblem p{.num_tokens = 16,
                     .hidden_size = 2048,
                     .intermediate_size = 768,
                     .num_experts = 128,
                     .top_k = 8};
  Ceilings c{.copy_GBps = 4000, .matmul_GFLOPs = 700e3};
  Floor const f = floor_for(p, 100, c);
  double const bytes = 100.0 * (1536 * 2048 + 2048 * 768) * 2 + 2.0 * 16 * 2048 * 2 + 8.0 * 16 * 8;
  EXPECT_DOUBLE_EQ(f.bytes_min, bytes);
  EXPECT_DOUBLE_EQ(f.floor_us, bytes / 4000e9 * 1e6);
  EXPECT_TRUE(f.bandwidth_bound);
  p.num_tokens = 65536;
  EXPECT_FALSE(floor_for(p, 128, c).bandwidth_bound);
}

TEST(BenchCeilings, AnFp8FloorCountsOneBytePerWeightPlusScalesAndFlopsAtTheFp8Rate) {
  core::MoeProblem p{.num_tokens = 65536,
                     .hidden_size = 2048,
                     .intermediate_size = 768,
                     .num_experts = 128,
                     .top_k = 8};
  p.quant = core::Quant::kFp8Block;
  Ceilings c{.copy_GBps = 4000, .matmul_GFLOPs = 700e3};
  Floor const f = floor_for(p, 100, c);
  double const w = 1536.0 * 2048 + 2048.0 * 768;
  double const bytes =
      100.0 * (w + 4.0 * w / (128 * 128)) + 2.0 * 65536 * 2048 * 2 + 8.0 * 65536 * 8;
  EXPECT_DOUBLE_EQ(f.bytes_min, bytes);
  EXPECT_DOUBLE_EQ(f.floor_us, bytes / 4000e9 * 1e6);  // the bf16 rate would bound it here
  EXPECT_TRUE(f.bandwidth_bound);
  c.fp8_GFLOPs = 1300e3;  // with the fp8 rate measured, flops at that rate bound it
  Floor const g = floor_for(p, 100, c);
  EXPECT_DOUBLE_EQ(g.floor_us, core::flops(p) / 1300e12 * 1e6);
  EXPECT_FALSE(g.bandwidth_bound);
  p.quant = core::Quant::kNone;  // a bf16 problem keeps the bf16 rate
  EXPECT_DOUBLE_EQ(floor_for(p, 100, c).floor_us, core::flops(p) / 700e12 * 1e6);
}

TEST(BenchCsv, QuotedFieldsRoundTripAndWidthsAreChecked) {
  std::string const line = csv_line({"a", "b,c", "say \"hi\"", ""});
  auto t = parse_csv("h1,h2,h3,h4\n" + line + "\n", "x.csv");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_EQ(t->at(0, "h2"), "b,c");
  EXPECT_EQ(t->at(0, "h3"), "say \"hi\"");
  auto bad = parse_csv("a,b\n1,2\n3\n", "x.csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().to_string(), "x.csv:3: 1 fields but the header has 2");
}

TEST(ArmSpec, ParsesEveryItemKind) {
  auto a = parse_arm("B=tables:t/cpu,levers:cpu_register_tiles=off+pdl=on,binary:/bin/true");
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  EXPECT_EQ(a->name, "B");
  EXPECT_EQ(a->tables, "t/cpu");
  EXPECT_EQ(a->levers, "cpu_register_tiles=off,pdl=on");
  EXPECT_EQ(a->binary, "/bin/true");
  auto d = parse_arm("A=default");
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->tables.empty() && d->levers.empty() && d->binary.empty() && d->defines.empty());
  auto v = parse_arm("C=defines:MOETUNE_TMA_WEIGHT_L2=1+FLAG_2");
  ASSERT_TRUE(v.ok()) << v.error().to_string();
  EXPECT_EQ(v->defines, "MOETUNE_TMA_WEIGHT_L2=1 FLAG_2");
}

// A defines item holds C identifiers with optional values: an option smuggled in (-O0), an
// empty value or a bad name is refused with the item kinds.
TEST(ArmSpec, RejectsDefinesThatAreNotNamesWithValues) {
  for (const char* bad :
       {"B=defines:-O0", "B=defines:X=", "B=defines:1X=1", "B=defines:A=1+", "B=defines:X=a b"}) {
    auto a = parse_arm(bad);
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_NE(a.error().to_string().find("defines:NAME[=VALUE][+...]"), std::string::npos)
        << a.error().to_string();
  }
}

TEST(ArmSpec, RejectsUnknownItemsWithASuggestion) {
  auto a = parse_arm("B=table:t/cpu");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().to_string(),
            "--arm B=table:t/cpu: item 'table:t/cpu' is not one of default, tables:DIR, "
            "levers:NAME=on|off[+...], binary:PATH, defines:NAME[=VALUE][+...]; did you mean "
            "'tables'?");
  EXPECT_FALSE(parse_arm("noname").ok());
}

TEST(ArmProtocol, WorkerLinesRoundTripAndForeignOutputIsRefused) {
  BenchPoint p;
  p.series = "s";
  p.problem.num_tokens = 16;
  p.digest = "abcd";
  p.samples_us = {1.5, 2.25};
  p.rule = "default";
  std::string const text = arm_worker_header("cpu", "dev") + "\n" + arm_point_json(p) + "\n";
  auto r = parse_arm_output(text, "arm A");
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->points.size(), 1u);
  EXPECT_EQ(r->points[0].m, 16);
  EXPECT_EQ(r->points[0].digest, "abcd");
  EXPECT_EQ(r->points[0].samples_us, (std::vector<double>{1.5, 2.25}));
  EXPECT_EQ(r->device, "dev");
  auto foreign = parse_arm_output("{\"hello\": 1}\n", "arm A");
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.error().code, core::ErrorCode::kParse);
  EXPECT_FALSE(parse_arm_output("", "arm A").ok());
  // A header of another protocol version, and a point line without its digest, are refused
  // naming the line; the twin of each is the round trip above.
  std::string other = arm_worker_header("cpu", "dev");
  const std::string version = "\"worker_version\": " + std::to_string(kArmWorkerVersion);
  ASSERT_NE(other.find(version), std::string::npos) << other;
  other.replace(other.find(version), version.size(),
                "\"worker_version\": " + std::to_string(kArmWorkerVersion + 1));
  auto newer = parse_arm_output(other + "\n", "arm A");
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.error().code, core::ErrorCode::kVersion);
  EXPECT_EQ(newer.error().where, "arm A: line 1");
  std::string point = arm_point_json(p);
  point.replace(point.find("\"digest\""), 8, "\"digestX\"");
  auto lacking = parse_arm_output(arm_worker_header("cpu", "dev") + "\n" + point + "\n", "arm A");
  ASSERT_FALSE(lacking.ok());
  EXPECT_EQ(lacking.error().where, "arm A: line 2");
  EXPECT_NE(lacking.error().message.find("a point line lacks a field"), std::string::npos);
}

}  // namespace
}  // namespace moetune::bench
