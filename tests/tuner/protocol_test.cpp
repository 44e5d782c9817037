// tuner/protocol: every request and response survives encode/decode; the flat scanner rejects
// malformed lines, and a corrupted field is caught rather than read as a default.
#include "tuner/protocol.hpp"

#include <cmath>

#include <gtest/gtest.h>

namespace moetune::tuner {
namespace {

core::MoeConfig odd_config() {
  core::MoeConfig c;
  c.gemm1.tile.block_m = 16;
  c.gemm2.tile.block_m = 16;
  c.gemm2.pipeline.split_k = 2;
  c.gemm1.launch.num_threads = 1;
  return c;
}

TEST(Protocol, RequestsRoundTrip) {
  Request r{
      .op = "time", .config = odd_config(), .warmup = 2, .reps = 7, .fault = FaultKind::kHang};
  auto back = decode_request(encode(r), "test");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->op, "time");
  EXPECT_EQ(back->config, r.config);
  EXPECT_EQ(back->warmup, 2);
  EXPECT_EQ(back->reps, 7);
  EXPECT_EQ(back->fault, FaultKind::kHang);

  Request p{.op = "prepare", .seed = 123456789012345ull};
  p.problem.num_tokens = 4;
  p.problem.hidden_size = 64;
  p.routing.kind = core::RoutingKind::kZipf;
  auto pb = decode_request(encode(p), "test");
  ASSERT_TRUE(pb.ok()) << pb.error().to_string();
  EXPECT_EQ(pb->problem, p.problem);
  EXPECT_EQ(pb->routing, p.routing);
  EXPECT_EQ(pb->seed, p.seed);

  Request f{.op = "feasible", .configs = {odd_config(), core::MoeConfig{}}};
  auto fb = decode_request(encode(f), "test");
  ASSERT_TRUE(fb.ok()) << fb.error().to_string();
  EXPECT_EQ(fb->configs, f.configs);
}

TEST(Protocol, ResponsesRoundTripIncludingNaNAndQuotes) {
  Response r;
  r.has_check = true;
  r.check.rel_l2_error = NAN;
  r.check.all_finite = false;
  r.check.digest = "ab\"cd";
  r.check.first_bad = 17;
  r.samples_us = {1.5, 2.25, 1e-3};
  r.reasons = {"", "gemm1.tile.block_m = 3 is not a power of two"};
  auto back = decode_response(encode(r), "test");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_TRUE(back->has_check);
  EXPECT_TRUE(std::isnan(back->check.rel_l2_error));
  EXPECT_FALSE(back->check.all_finite);
  EXPECT_EQ(back->check.digest, "ab\"cd");
  EXPECT_EQ(back->check.first_bad, 17);
  EXPECT_EQ(back->samples_us, r.samples_us);
  EXPECT_EQ(back->reasons, r.reasons);

  Response failed;
  failed.ok = false;
  failed.outcome = Outcome::kCompileFailed;
  failed.message = "line 1\nline 2";
  auto fb = decode_response(encode(failed), "test");
  ASSERT_TRUE(fb.ok());
  EXPECT_FALSE(fb->ok);
  EXPECT_EQ(fb->outcome, Outcome::kCompileFailed);
  EXPECT_EQ(fb->message, "line 1\nline 2");
}

TEST(Protocol, ACheckWithoutItsResultIsNotReadAsPassing) {
  // Negative twin of the round trip: the digest field dropped, so has_check stays false and the
  // gate refuses it, instead of reading a default (passing) CheckResult.
  Response r;
  r.has_check = true;
  r.check.digest = "00";
  std::string line = encode(r);
  line.replace(line.find("\"digest\""), 8, "\"digestX\"");
  auto back = decode_response(line, "test");
  ASSERT_TRUE(back.ok());
  EXPECT_FALSE(back->has_check);
}

TEST(Protocol, MalformedLinesAreErrors) {
  EXPECT_FALSE(decode_request("{\"op\": \"check\"", "t").ok());
  EXPECT_FALSE(decode_request("[1, 2]", "t").ok());
  EXPECT_FALSE(decode_request("{\"op\": \"a\", \"op\": \"b\"}", "t").ok());
  EXPECT_FALSE(decode_response("{\"ok\": maybe}", "t").ok());
  auto bad_outcome =
      decode_response("{\"ok\": false, \"outcome\": \"exploded\", \"message\": \"\"}", "t");
  ASSERT_FALSE(bad_outcome.ok());
  EXPECT_NE(bad_outcome.error().message.find("unknown outcome 'exploded'"), std::string::npos);
}

TEST(Protocol, DoublesRoundTripExactly) {
  std::vector<double> v = {0.1, 1.0 / 3.0, 12345.678901234, 0};
  auto back = parse_doubles(json_doubles(v), "t");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, v);
}

}  // namespace
}  // namespace moetune::tuner
