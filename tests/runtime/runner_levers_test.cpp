// MoeRunner's fast paths (levers) on the cpu backend: resolved once at create() from the
// environment (MOETUNE_LEVER_<NAME>) unless RunnerOptions::levers gives them, each lever with its
// rule; a bad MOETUNE_* variable fails create() with the resolver's one-line message.
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "core/scoped_env.hpp"
#include "core/temp_dir.hpp"
#include "kernels/cpu/moe_data.hpp"
#include "kernels/fast_paths_from_levers.hpp"
#include "moetune/moe_runner.hpp"

namespace moetune {
namespace {

core::MoeProblem demo_problem() {
  return *core::parse_problem_spec("E=8,K=256,I=128,topk=2,act=silu,dtype=bf16,arch=cpu");
}

class RunnerLeversTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = moetune::testing::unique_temp_dir("runner_levers"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  RunnerOptions options(core::EnvSnapshot env) const {
    RunnerOptions o;
    o.cache_path = dir_ + "/knobs.json";
    o.max_tokens = 64;
    o.warn = [](std::string const&) {};
    o.levers.env = std::move(env);
    return o;
  }
  core::Result<std::unique_ptr<MoeRunner>> make(core::EnvSnapshot env) const {
    return MoeRunner::create(demo_problem(), "cpu", options(std::move(env)));
  }
  std::string error_of(core::EnvSnapshot env) const {
    auto r = make(std::move(env));
    EXPECT_FALSE(r.ok());
    return r.ok() ? "" : r.error().to_string();
  }
  std::string dir_;
};

TEST_F(RunnerLeversTest, EmptyEnvironmentGivesEachLeverItsDefaultRule) {
  auto r = make({});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  RunnerLevers const& lv = (*r)->levers();
  EXPECT_EQ(lv.origin, "environment");
  ASSERT_TRUE(lv.deployment.has_value());
  EXPECT_EQ(core::to_string(*lv.deployment),
            "backend=cpu,arch=cpu,tp=1,ep=1,dtype=bf16,role=prefill");
  EXPECT_TRUE(lv.fast_paths.cpu_register_tiles);
  EXPECT_EQ(on_names(lv.fast_paths), "cpu_register_tiles");  // the cuda levers are not served
  ASSERT_EQ(lv.levers.size(), kernels::fast_path_names().size());
  for (auto const& l : lv.levers) {
    EXPECT_FALSE(l.rule.empty()) << l.name;
    bool const served = l.name == "cpu_register_tiles" || l.name == "batch_invariant";
    EXPECT_EQ(l.decided_by,
              served ? core::LeverDecision::kDefault : core::LeverDecision::kNotServed)
        << l.name;
  }
}

TEST_F(RunnerLeversTest, KnobInTheEnvironmentSwitchesTheLeverAndSaysSo) {
  auto r = make({{"MOETUNE_LEVER_CPU_REGISTER_TILES", "off"}});
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  RunnerLevers const& lv = (*r)->levers();
  EXPECT_FALSE(lv.fast_paths.cpu_register_tiles);
  EXPECT_EQ(on_names(lv.fast_paths), "");
  bool seen = false;
  for (auto const& l : lv.levers) {
    if (l.name != "cpu_register_tiles") continue;
    seen = true;
    EXPECT_EQ(l.decided_by, core::LeverDecision::kKnob);
    EXPECT_NE(l.rule.find("MOETUNE_LEVER_CPU_REGISTER_TILES=off"), std::string::npos) << l.rule;
  }
  EXPECT_TRUE(seen);
  // The lever is bitwise: the runner with it off gives the bits of the runner with it on.
  auto on = make({});
  ASSERT_TRUE(on.ok());
  core::MoeProblem p = (*r)->problem();
  p.num_tokens = 33;
  auto data = kernels::cpu::generate_moe_data(p, {}, 3);
  ASSERT_TRUE(data.ok());
  std::vector<uint16_t> a(33 * 256), b(33 * 256, 1);
  for (auto const& [runner, out] : {std::make_pair(r->get(), &a), std::make_pair(on->get(), &b)}) {
    ASSERT_TRUE(runner
                    ->run(nullptr, data->x_data(), data->routing.topk_ids.data(),
                          data->routing.topk_weights.data(), data->w1_data(), data->w2_data(),
                          out->data(), 33)
                    .ok());
  }
  EXPECT_EQ(a, b);
}

TEST_F(RunnerLeversTest, BadKnobValueFailsCreateWithTheResolversMessage) {
  EXPECT_EQ(error_of({{"MOETUNE_LEVER_CPU_REGISTER_TILES", "1"}}),
            "MoeRunner: environment: MOETUNE_LEVER_CPU_REGISTER_TILES = '1' is not a knob value; "
            "expected on or off");
}

TEST_F(RunnerLeversTest, UnknownVariableFailsCreateWithDidYouMean) {
  std::string const e = error_of({{"MOETUNE_CACHEDIR", "/tmp"}});
  EXPECT_EQ(e.rfind("MoeRunner: environment: MOETUNE_CACHEDIR is not a moetune variable", 0), 0u)
      << e;
  EXPECT_NE(e.find("did you mean 'MOETUNE_CACHE_DIR'?"), std::string::npos) << e;
  // The project's own variables are known.
  EXPECT_TRUE(make({{"MOETUNE_CACHE_DIR", "/tmp"}, {"MOETUNE_TEST_SEED", "7"}}).ok());
}

TEST_F(RunnerLeversTest, KnobForALeverNotServedOnCpuIsRefused) {
  std::string const e = error_of({{"MOETUNE_LEVER_PDL", "off"}});
  EXPECT_EQ(e.rfind("MoeRunner: environment: MOETUNE_LEVER_PDL=off is refused at "
                    "backend=cpu,arch=cpu,tp=1,ep=1,dtype=bf16,role=prefill",
                    0),
            0u)
      << e;
}

TEST_F(RunnerLeversTest, ExplicitFastPathsWinAndTheEnvironmentIsNotRead) {
  RunnerOptions o = options({{"MOETUNE_LEVER_CPU_REGISTER_TILES", "not-read"}});
  kernels::FastPaths fp;
  fp.cpu_register_tiles = false;
  o.levers.fast_paths = fp;
  auto r = MoeRunner::create(demo_problem(), "cpu", o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)->levers().origin, "options");
  EXPECT_FALSE((*r)->levers().fast_paths.cpu_register_tiles);
  EXPECT_FALSE((*r)->levers().deployment.has_value());
  EXPECT_TRUE((*r)->levers().levers.empty());
}

TEST_F(RunnerLeversTest, ProcessEnvironmentIsReadOnceAtCreate) {
  RunnerOptions o = options({});
  o.levers.env.reset();  // read this process's environment
  auto r = [&] {
    moetune::testing::ScopedEnv off("MOETUNE_LEVER_CPU_REGISTER_TILES", "off");
    return MoeRunner::create(demo_problem(), "cpu", o);
  }();
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE((*r)->levers().fast_paths.cpu_register_tiles);
  // Changing the environment later changes nothing: resolved once.
  moetune::testing::ScopedEnv on("MOETUNE_LEVER_CPU_REGISTER_TILES", "on");
  EXPECT_FALSE((*r)->levers().fast_paths.cpu_register_tiles);
}

TEST_F(RunnerLeversTest, DecodeRoleAndParallelismReachTheDeployment) {
  RunnerOptions o = options({});
  o.levers.role = "decode";
  auto r = MoeRunner::create(demo_problem(), "cpu", o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(core::to_string(*(*r)->levers().deployment),
            "backend=cpu,arch=cpu,tp=1,ep=1,dtype=bf16,role=decode");
  o.levers.role = "serve";
  auto bad = MoeRunner::create(demo_problem(), "cpu", o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().to_string().find("role"), std::string::npos) << bad.error().to_string();
}

TEST(OnNames, NamesEveryFastPathField) {
  kernels::FastPaths all;
  all.align_multi_cta = all.wgmma_mainloop = all.cpu_register_tiles = all.pdl = true;
  all.batch_invariant = true;
  std::string expected;
  for (auto const& n : kernels::fast_path_names()) expected += (expected.empty() ? "" : "+") + n;
  EXPECT_EQ(on_names(all), expected);
  EXPECT_EQ(on_names(kernels::FastPaths{.align_multi_cta = false,
                                        .wgmma_mainloop = false,
                                        .cpu_register_tiles = false,
                                        .pdl = false,
                                        .batch_invariant = false}),
            "");
}

}  // namespace
}  // namespace moetune
