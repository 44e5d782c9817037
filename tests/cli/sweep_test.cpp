// tuner::sweep_bucket against a scripted testbed: every candidate ends in one outcome, a wrong or
// non-finite result disqualifies, and the default keeps the bucket unless beaten by > 2%.
// (Lives beside the CLI tests because `moetune tune` is its only caller so far; it moves to
// tests/tuner/ with the isolated tuner.)
#include <map>

#include <gtest/gtest.h>

#include "tuner/sweep.hpp"

namespace moetune::tuner {
namespace {

core::MoeConfig config_with_block_m(int block_m) {
  core::KernelConfig k;
  k.tile.block_m = block_m;
  return core::uniform_config(k);
}

/// block_m 64 = the default; 8 is rejected by can_implement; 16 gives a wrong result; 32 gives
/// NaN; 128 is the challenger whose time the test sets.
class ScriptedBackend final : public core::Backend {
 public:
  std::string name() const override { return "scripted"; }
  std::string family() const override { return "scripted"; }
  int family_version() const override { return 1; }
  core::DeviceInfo device() const override { return {}; }
  core::Status can_implement(core::MoeProblem const&, core::MoeConfig const& c) const override {
    if (c.gemm1.tile.block_m == 8) {
      return core::make_error(core::ErrorCode::kUnsupported, "scripted", "block_m 8 unsupported");
    }
    return core::Status::Ok();
  }
  core::MoeConfig default_config(core::MoeProblem const&) const override {
    return config_with_block_m(64);
  }
  std::vector<core::MoeConfig> search_space(core::MoeProblem const&) const override {
    return {config_with_block_m(8), config_with_block_m(16), config_with_block_m(32),
            config_with_block_m(128)};
  }
};

class ScriptedTestbed final : public kernels::Testbed {
 public:
  explicit ScriptedTestbed(double challenger_us) : challenger_us_(challenger_us) {}
  core::Backend const& backend() const override { return backend_; }
  core::Status prepare(core::MoeProblem const&, core::RoutingProfile const&, uint64_t) override {
    return core::Status::Ok();
  }
  core::Result<kernels::CheckResult> check(core::MoeConfig const& c) override {
    kernels::CheckResult r;
    r.digest = "d" + std::to_string(c.gemm1.tile.block_m);
    if (c.gemm1.tile.block_m == 16) r.rel_l2_error = 0.5;
    if (c.gemm1.tile.block_m == 32) r.all_finite = false;
    return r;
  }
  core::Result<kernels::TimingResult> time(core::MoeConfig const& c, int, int) override {
    kernels::TimingResult t;
    t.median_us = c.gemm1.tile.block_m == 128 ? challenger_us_ : 100.0;
    if (c.gemm1.tile.block_m == 16 || c.gemm1.tile.block_m == 32) t.median_us = 1.0;
    return t;
  }

 private:
  ScriptedBackend backend_;
  double challenger_us_;
};

core::MoeProblem tiny_problem() {
  core::MoeProblem p;
  p.hidden_size = 64;
  p.intermediate_size = 32;
  p.num_experts = 4;
  p.top_k = 2;
  return p;
}

TEST(Sweep, ChallengerBeyondTheMarginWinsAndBadCandidatesAreDisqualified) {
  ScriptedTestbed bed(90.0);  // 10% faster than the default
  auto r = sweep_bucket(bed, tiny_problem(), {}, 16, {});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->winner, config_with_block_m(128));
  EXPECT_FALSE(r->incumbent_kept);
  EXPECT_EQ(r->candidates, 5);  // the default is measured too
  EXPECT_EQ(r->rejected, 1);
  EXPECT_EQ(r->wrong, 2);  // wrong result and NaN, though both "ran faster"
  EXPECT_DOUBLE_EQ(r->time_us, 90.0);
  EXPECT_DOUBLE_EQ(r->default_us, 100.0);
  EXPECT_EQ(r->digest, "d128");
}

TEST(Sweep, DefaultStaysUnlessBeatenByMoreThanTwoPercent) {
  ScriptedTestbed bed(98.5);  // 1.5% faster: noise, not a win
  auto r = sweep_bucket(bed, tiny_problem(), {}, 16, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->winner, config_with_block_m(64));
  EXPECT_TRUE(r->incumbent_kept);
  EXPECT_DOUBLE_EQ(r->time_us, 100.0);
}

}  // namespace
}  // namespace moetune::tuner
