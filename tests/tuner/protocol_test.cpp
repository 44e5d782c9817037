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

TEST(Protocol, SpaceAndPrecompileRoundTrip) {
  Response space;
  space.default_config = odd_config();
  core::KernelConfig wide = odd_config().gemm1;
  wide.tile.block_n = 256;
  space.gemm_spaces = {core::GemmSpace{.block_m = 16,
                                       .gemm1 = {odd_config().gemm1, wide},
                                       .gemm2 = {wide},
                                       .base = odd_config()},
                       core::GemmSpace{.block_m = 64}};
  auto back = decode_response(encode(space), "test");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->default_config, space.default_config);
  EXPECT_TRUE(back->configs.empty());
  ASSERT_EQ(back->gemm_spaces.size(), 2u);
  EXPECT_EQ(back->gemm_spaces[0].block_m, 16);
  EXPECT_EQ(back->gemm_spaces[0].gemm1, space.gemm_spaces[0].gemm1);
  EXPECT_EQ(back->gemm_spaces[0].gemm2, space.gemm_spaces[0].gemm2);
  EXPECT_EQ(back->gemm_spaces[0].base, space.gemm_spaces[0].base);
  EXPECT_EQ(back->gemm_spaces[1].block_m, 64);
  EXPECT_TRUE(back->gemm_spaces[1].gemm1.empty());

  Request pre{.op = "precompile", .configs = {odd_config(), core::MoeConfig{}}};
  pre.faults = {FaultKind::kCompile, FaultKind::kNone};
  auto pb = decode_request(encode(pre), "test");
  ASSERT_TRUE(pb.ok()) << pb.error().to_string();
  EXPECT_EQ(pb->configs, pre.configs);
  EXPECT_EQ(pb->faults, pre.faults);
  EXPECT_FALSE(pb->background);
  pre.background = true;
  auto bg = decode_request(encode(pre), "test");
  ASSERT_TRUE(bg.ok()) << bg.error().to_string();
  EXPECT_TRUE(bg->background);
  EXPECT_EQ(bg->configs, pre.configs);

  Response compiled;
  compiled.reasons = {"", "NVRTC could not compile x"};
  compiled.outcomes = {Outcome::kOk, Outcome::kCompileFailed};
  auto cb = decode_response(encode(compiled), "test");
  ASSERT_TRUE(cb.ok()) << cb.error().to_string();
  EXPECT_EQ(cb->reasons, compiled.reasons);
  EXPECT_EQ(cb->outcomes, compiled.outcomes);
}

TEST(Protocol, ASpaceAnswerWithoutItsPerGemmSpacesIsAnError) {
  // Negative twin: a space answer that lost gemm_spaces must not read as a joint-only family.
  Response space;
  space.configs = {odd_config()};
  std::string line = encode(space);
  line.replace(line.find("\"gemm_spaces\""), 13, "\"gemm_spaceX\"");
  auto back = decode_response(line, "test");
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().message.find("needs configs and gemm_spaces"), std::string::npos)
      << back.error().to_string();
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

TEST(Protocol, AHelloOrCheckAnswerMissingAFieldIsAnErrorNotAnException) {
  Response hello;
  hello.backend = "cpu";
  hello.family = "cpu_ref";
  hello.protocol_version = 3;
  hello.family_version = 1;
  std::string const line = encode(hello);
  ASSERT_TRUE(decode_response(line, "test").ok());  // the twin: the whole answer decodes
  for (std::string const field : {"\"protocol_version\"", "\"family\"", "\"device\""}) {
    std::string broken = line;
    broken.replace(broken.find(field), field.size(), "\"renamed\"");
    auto back = decode_response(broken, "test");  // must not throw
    ASSERT_FALSE(back.ok()) << field;
    EXPECT_EQ(back.error().where, "test") << back.error().to_string();
  }
  Response check;
  check.has_check = true;
  check.check.digest = "00";
  std::string broken = encode(check);
  broken.replace(broken.find("\"first_bad\""), 11, "\"renamed\"");
  EXPECT_FALSE(decode_response(broken, "test").ok());
}

TEST(Protocol, DoublesRoundTripExactly) {
  std::vector<double> v = {0.1, 1.0 / 3.0, 12345.678901234, 0};
  auto back = parse_doubles(json_doubles(v), "t");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, v);
}

}  // namespace
}  // namespace moetune::tuner
