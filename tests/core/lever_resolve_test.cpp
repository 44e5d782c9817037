// Lever resolution: every rule of core/lever_resolve.hpp, each error message verbatim.
#include "core/lever_resolve.hpp"

#include <gtest/gtest.h>

#include "core/lever_fixtures.hpp"

namespace moetune::core {
namespace {

using moetune::testing::other_vars;
using moetune::testing::rule_table;

Deployment const kCuda{};
Deployment const kCudaTp8{.tp = 8, .ep = 8};
Deployment const kCpu{.backend = "cpu", .arch = "cpu", .dtype = "fp32", .role = "decode"};

LeverResolution resolve_ok(Deployment const& d, EnvSnapshot const& env = {}) {
  auto r = resolve_levers(rule_table(), d, env, other_vars());
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? *r : LeverResolution{};
}

std::string resolve_error(Deployment const& d, EnvSnapshot const& env) {
  auto r = resolve_levers(rule_table(), d, env, other_vars());
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error().to_string();
}

TEST(LeverResolve, DefaultRulesDecideWithAnEmptyEnvironmentAndSaySo) {
  LeverResolution const r = resolve_ok(kCuda);
  EXPECT_EQ(r.on_names(), std::vector<std::string>({"a"}));
  EXPECT_EQ(r.find("a")->rule, "default: on where backend=cuda");
  EXPECT_EQ(r.find("a")->decided_by, LeverDecision::kDefault);
  EXPECT_EQ(r.find("b")->rule, "default: off (knob only)");
  EXPECT_EQ(r.find("c")->rule, "default: off (on only where tp in {>=8})");
  EXPECT_EQ(resolve_ok(kCudaTp8).on_names(), std::vector<std::string>({"a", "c"}));
  EXPECT_EQ(resolve_ok(kCudaTp8).find("c")->rule, "default: on where tp in {>=8}");
}

TEST(LeverResolve, ResultKeepsTableOrderNotDependencyOrder) {
  LeverResolution const r = resolve_ok(kCuda);
  std::vector<std::string> names;
  for (auto const& l : r.levers) names.push_back(l.name);
  EXPECT_EQ(names, std::vector<std::string>({"b", "a", "c", "d", "e"}));
}

TEST(LeverResolve, KnobDecidesAServedLever) {
  LeverResolution const on = resolve_ok(kCuda, {{"MOETUNE_LEVER_B", "on"}});
  EXPECT_TRUE(on.find("b")->on);
  EXPECT_EQ(on.find("b")->decided_by, LeverDecision::kKnob);
  EXPECT_EQ(on.find("b")->rule, "knob: MOETUNE_LEVER_B=on");
  LeverResolution const off = resolve_ok(kCuda, {{"MOETUNE_LEVER_A", "off"}});
  EXPECT_FALSE(off.find("a")->on);
  EXPECT_EQ(off.find("a")->rule, "knob: MOETUNE_LEVER_A=off");
}

TEST(LeverResolve, UnmetDependencyResolvesOffWithTheReason) {
  // b is listed before a; a is off at cpu by default, so b's knob cannot turn it on.
  LeverResolution const r = resolve_ok(kCpu, {{"MOETUNE_LEVER_B", "on"}});
  EXPECT_FALSE(r.find("b")->on);
  EXPECT_EQ(r.find("b")->decided_by, LeverDecision::kDependency);
  EXPECT_EQ(r.find("b")->rule,
            "off: depends on 'a', which is off (default: off (on only where backend=cuda))");
  LeverResolution const knob_off =
      resolve_ok(kCuda, {{"MOETUNE_LEVER_A", "off"}, {"MOETUNE_LEVER_B", "on"}});
  EXPECT_EQ(knob_off.find("b")->rule,
            "off: depends on 'a', which is off (knob: MOETUNE_LEVER_A=off)");
  EXPECT_TRUE(resolve_ok(kCuda, {{"MOETUNE_LEVER_B", "on"}}).find("b")->on);
}

TEST(LeverResolve, LeverNotServedHereIsOffWithTheReason) {
  LeverResolution const r = resolve_ok(kCuda);
  EXPECT_FALSE(r.find("e")->on);
  EXPECT_EQ(r.find("e")->decided_by, LeverDecision::kNotServed);
  EXPECT_EQ(r.find("e")->rule, "not served here (served where role=prefill)");
  Deployment prefill = kCuda;
  prefill.role = "prefill";
  EXPECT_TRUE(resolve_ok(prefill).find("e")->on);
}

TEST(LeverResolve, KnobForALeverNotServedHereIsRefused) {
  EXPECT_EQ(resolve_error(kCuda, {{"MOETUNE_LEVER_E", "on"}}),
            "environment: MOETUNE_LEVER_E=on is refused at "
            "backend=cuda,arch=sm90,tp=1,ep=1,dtype=bf16,role=decode: lever 'e' is served only "
            "where role=prefill; unset MOETUNE_LEVER_E");
  // Off is refused too: the knob names a path that does not exist here.
  EXPECT_FALSE(
      resolve_levers(rule_table(), kCuda, {{"MOETUNE_LEVER_E", "off"}}, other_vars()).ok());
}

TEST(LeverResolve, TwoExclusiveLeversOnIsAnError) {
  EXPECT_EQ(resolve_error(kCudaTp8, {{"MOETUNE_LEVER_D", "on"}}),
            "levers at backend=cuda,arch=sm90,tp=8,ep=8,dtype=bf16,role=decode: 'c' (default: on "
            "where tp in {>=8}) and 'd' (knob: MOETUNE_LEVER_D=on) are both on but exclusive; set "
            "MOETUNE_LEVER_C=off or MOETUNE_LEVER_D=off");
  EXPECT_TRUE(
      resolve_ok(kCudaTp8, {{"MOETUNE_LEVER_C", "off"}, {"MOETUNE_LEVER_D", "on"}}).find("d")->on);
}

TEST(LeverResolve, RetiredNameIsAnErrorNamingItsReplacement) {
  EXPECT_EQ(
      resolve_error(kCuda, {{"MOETUNE_OLD_B", "1"}}),
      "environment: MOETUNE_OLD_B is retired (renamed to lever b); set MOETUNE_LEVER_B=on|off "
      "instead and unset MOETUNE_OLD_B");
}

TEST(LeverResolve, RemovedLeverKnobIsAnErrorSayingItIsGone) {
  LeverTable t = rule_table();
  t.retired.push_back(
      {.name = "MOETUNE_LEVER_GONE", .replacement = "", .reason = "slower wherever measured"});
  ASSERT_TRUE(validate(t, "t.json").ok());
  auto r = resolve_levers(t, kCuda, {{"MOETUNE_LEVER_GONE", "on"}}, other_vars());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().to_string(),
            "environment: MOETUNE_LEVER_GONE is retired (slower wherever measured); the lever is "
            "gone: unset MOETUNE_LEVER_GONE");
}

TEST(LeverResolve, UnknownLeverKnobIsAnErrorWithDidYouMean) {
  EXPECT_EQ(resolve_error(kCuda, {{"MOETUNE_LEVER_BB", "on"}}),
            "environment: MOETUNE_LEVER_BB is not a lever knob; expected one of MOETUNE_LEVER_B, "
            "MOETUNE_LEVER_A, MOETUNE_LEVER_C, MOETUNE_LEVER_D, MOETUNE_LEVER_E (moetune levers "
            "list); unset it; did you mean 'MOETUNE_LEVER_B'?");
}

TEST(LeverResolve, UnknownVariableIsAnErrorWithDidYouMean) {
  EXPECT_EQ(resolve_error(kCuda, {{"MOETUNE_BACKNED", "cpu"}}),
            "environment: MOETUNE_BACKNED is not a moetune variable; expected a lever knob "
            "MOETUNE_LEVER_<NAME> or one of MOETUNE_BACKEND, MOETUNE_CACHE_DIR; unset it; did you "
            "mean 'MOETUNE_BACKEND'?");
}

TEST(LeverResolve, KnobValueOtherThanOnOrOffIsAnError) {
  EXPECT_EQ(resolve_error(kCuda, {{"MOETUNE_LEVER_A", "1"}}),
            "environment: MOETUNE_LEVER_A = '1' is not a knob value; expected on or off");
}

TEST(LeverResolve, ProjectVariablesAreKnownAndIgnored) {
  LeverResolution const r =
      resolve_ok(kCuda, {{"MOETUNE_BACKEND", "cpu"}, {"MOETUNE_CACHE_DIR", "/x"}});
  EXPECT_EQ(r, resolve_ok(kCuda));
}

TEST(LeverResolve, SnapshotKeepsOnlyMoetuneVariables) {
  char const* envp[] = {"PATH=/bin", "MOETUNE_LEVER_A=off", "MOETUNE_X=a=b", "MOETUNE", nullptr};
  EnvSnapshot const env = snapshot_environment(envp);
  EXPECT_EQ(env, (EnvSnapshot{{"MOETUNE_LEVER_A", "off"}, {"MOETUNE_X", "a=b"}}));
  EXPECT_TRUE(snapshot_environment(nullptr).empty());
}

TEST(LeverResolve, ResolutionIsTotalOverTheMatrixWithAnEmptyEnvironment) {
  LeverTable const t = rule_table();
  for (auto const& d : t.deployments) {
    auto r = resolve_levers(t, d, {}, {});
    ASSERT_TRUE(r.ok()) << to_string(d);
    EXPECT_EQ(r->levers.size(), t.levers.size());
    for (auto const& l : r->levers) EXPECT_FALSE(l.rule.empty()) << l.name;
  }
}

}  // namespace
}  // namespace moetune::core
