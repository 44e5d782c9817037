// Lever data: deployment text, conditions, table validation and the lever table file (every
// error message verbatim), and the checked-in levers/levers.json.
#include "core/lever.hpp"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/lever_fixtures.hpp"
#include "core/lever_io.hpp"

namespace moetune::core {
namespace {

using moetune::testing::rule_table;
using moetune::testing::test_lever;

std::string parse_error(std::string const& text) {
  auto d = parse_deployment(text, "--deployment");
  EXPECT_FALSE(d.ok()) << text;
  return d.ok() ? "" : d.error().to_string();
}

std::string validate_error(LeverTable const& t) {
  Status s = validate(t, "t.json");
  EXPECT_FALSE(s.ok());
  return s.ok() ? "" : s.error().to_string();
}

TEST(Deployment, PrintThenParseGivesTheSameDeployment) {
  for (auto const& d : rule_table().deployments) {
    auto back = parse_deployment(to_string(d), "x");
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_EQ(*back, d);
  }
  EXPECT_EQ(to_string(Deployment{}), "backend=cuda,arch=sm90,tp=1,ep=1,dtype=bf16,role=decode");
}

TEST(Deployment, KeysMayComeInAnyOrder) {
  auto d = parse_deployment("role=prefill,tp=8,ep=2,dtype=fp16,arch=sm100,backend=cuda", "x");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d,
            (Deployment{.arch = "sm100", .tp = 8, .ep = 2, .dtype = "fp16", .role = "prefill"}));
}

TEST(Deployment, BadTextIsRejectedWithTheReason) {
  EXPECT_EQ(parse_error("backend=cuda,arch=sm90,tp=1,ep=1,dtype=bf16,rol=decode"),
            "--deployment: unknown deployment key 'rol'; expected one of backend, arch, tp, ep, "
            "dtype, role; did you mean 'role'?");
  EXPECT_EQ(parse_error("backend=cuda,arch=sm90,tp=1,ep=1,dtype=bf16"),
            "--deployment: deployment lacks key 'role'; give all of backend, arch, tp, ep, dtype, "
            "role, e.g. backend=cuda,arch=sm90,tp=1,ep=1,dtype=bf16,role=decode");
  EXPECT_EQ(parse_error("backend=cuda,backend=cpu"),
            "--deployment: deployment key 'backend' is given twice; give each key once");
  EXPECT_EQ(parse_error("backend=cuda,arch=sm90,tp=x,ep=1,dtype=bf16,role=decode"),
            "--deployment: tp = 'x' is not an integer; write e.g. tp=8");
  EXPECT_EQ(
      parse_error("backend=cuda,arch=sm9,tp=1,ep=1,dtype=bf16,role=decode"),
      "--deployment: arch = 'sm9' is not one of cpu, sm80, sm90, sm100; did you mean 'sm90'?");
  EXPECT_EQ(parse_error("backend=cpu,arch=sm90,tp=1,ep=1,dtype=bf16,role=decode"),
            "--deployment: backend = cpu with arch = sm90 does not exist; arch is cpu exactly when "
            "backend is cpu");
  EXPECT_EQ(parse_error("backend=cuda,arch=sm90,tp=0,ep=1,dtype=bf16,role=decode"),
            "--deployment: tp = 0, ep = 1 must both be >= 1");
  EXPECT_EQ(parse_error("cuda"),
            "--deployment: 'cuda' is not KEY=VAL; write e.g. "
            "backend=cuda,arch=sm90,tp=1,ep=1,dtype=bf16,role=decode");
}

TEST(LeverCondition, MatchesLiteralsAndBounds) {
  Deployment const tp8{.tp = 8, .ep = 8};
  EXPECT_TRUE(matches({{}}, tp8));
  EXPECT_FALSE(matches({}, tp8));
  EXPECT_TRUE(matches({{{"tp", {">=8"}}}}, tp8));
  EXPECT_FALSE(matches({{{"tp", {"<=2"}}}}, tp8));
  EXPECT_TRUE(matches({{{"tp", {"1", "8"}}, {"arch", {"sm90"}}}}, tp8));
  EXPECT_FALSE(matches({{{"tp", {"8"}}, {"role", {"prefill"}}}}, tp8));
  EXPECT_EQ(matching_clause({{{"role", {"prefill"}}}, {{"ep", {"8"}}}}, tp8), 1);
}

TEST(LeverCondition, PrintsInDeploymentKeyOrder) {
  EXPECT_EQ(to_string(LeverCondition{}), "nowhere");
  EXPECT_EQ(to_string(LeverCondition{{}}), "everywhere");
  EXPECT_EQ(to_string(LeverCondition{{{"role", {"decode"}}, {"backend", {"cuda"}}},
                                     {{"tp", {">=8"}}, {"dtype", {"bf16", "fp16"}}}}),
            "backend=cuda and role=decode or tp in {>=8} and dtype in {bf16,fp16}");
}

TEST(Lever, KnobIsTheUpperCaseName) {
  EXPECT_EQ(knob_name("wgmma_mainloop"), "MOETUNE_LEVER_WGMMA_MAINLOOP");
}

TEST(LeverTable, RuleTableIsValidAndDependenciesComeFirst) {
  LeverTable const t = rule_table();
  ASSERT_TRUE(validate(t, "t.json").ok()) << validate(t, "t.json").error().to_string();
  EXPECT_EQ(dependency_order(t), std::vector<std::string>({"a", "c", "d", "e", "b"}));
}

TEST(LeverTable, InconsistentTablesAreRejectedWithTheReason) {
  LeverTable t = rule_table();
  t.levers[0].depends_on = {"aa"};
  EXPECT_EQ(validate_error(t),
            "t.json: levers.b: depends_on names 'aa', which is no lever; did you mean 'a'?");
  t = rule_table();
  t.levers[2].exclusive_with = {"c"};
  EXPECT_EQ(validate_error(t),
            "t.json: levers.c: exclusive_with names the lever itself; remove 'c'");
  t = rule_table();
  t.levers[1].depends_on = {"b"};
  EXPECT_EQ(validate_error(t),
            "t.json: depends_on has a cycle; a lever cannot depend on itself through others");
  t = rule_table();
  t.levers.push_back(t.levers[1]);
  EXPECT_EQ(validate_error(t), "t.json: lever 'a' is declared twice; keep one entry");
  t = rule_table();
  t.levers[1].name = "Fast-A";
  t.levers[0].depends_on = {};
  EXPECT_EQ(validate_error(t),
            "t.json: lever name 'Fast-A' is not lower_snake_case ([a-z][a-z0-9_]*); rename it");
  t = rule_table();
  t.levers[1].default_on = {{{"rol", {"decode"}}}};
  EXPECT_EQ(validate_error(t),
            "t.json: levers.a.default_on: condition key 'rol' is not a deployment key; expected "
            "one of backend, arch, tp, ep, dtype, role; did you mean 'role'?");
  t = rule_table();
  t.levers[1].served_at = {{{"tp", {">8"}}}};
  EXPECT_EQ(validate_error(t),
            "t.json: levers.a.served_at: tp alternative '>8' is not an integer, '>=N' or '<=N'; "
            "write e.g. \"8\" or \">=8\"");
  t = rule_table();
  t.retired[0].name = "OLD_B";
  EXPECT_EQ(validate_error(t),
            "t.json: retired name 'OLD_B' does not start with MOETUNE_; write the full variable "
            "name");
  t = rule_table();
  t.retired[0].name = "MOETUNE_LEVER_A";
  EXPECT_EQ(validate_error(t),
            "t.json: retired name 'MOETUNE_LEVER_A' is the live knob of lever 'a'; remove one of "
            "them");
  t = rule_table();
  t.retired[0].replacement = "bb";
  EXPECT_EQ(validate_error(t),
            "t.json: retired name 'MOETUNE_OLD_B' names replacement 'bb', which is no lever; did "
            "you mean 'b'?");
  t = rule_table();
  t.levers[1].lever_class = LeverClass::kNondeterministic;  // a: on at backend = cuda
  EXPECT_EQ(validate_error(t),
            "t.json: levers.a.default_on: a nondeterministic lever is on by default at "
            "backend=cuda; the default path must give the same bits every run: set default_on "
            "to []");
  t.levers[1].default_on = {};
  EXPECT_TRUE(validate(t, "t.json").ok());
  t = rule_table();
  t.deployments[0].role = "serve";
  EXPECT_EQ(validate_error(t),
            "t.json: deployments[0]: role = 'serve' is not one of prefill, decode");
}

TEST(LeverTableFile, PrintThenParseGivesTheSameTable) {
  LeverTable const t = rule_table();
  auto back = parse_lever_table_json(to_json_text(t), "t.json");
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, t);
}

TEST(LeverTableFile, BadFilesAreRejectedByName) {
  std::string text = to_json_text(rule_table());
  std::string const version = "\"lever_table_version\": 1";
  ASSERT_NE(text.find(version), std::string::npos);
  std::string too_new = text;
  too_new.replace(too_new.find(version), version.size(), "\"lever_table_version\": 2");
  auto v = parse_lever_table_json(too_new, "t.json");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, ErrorCode::kVersion);
  EXPECT_EQ(v.error().to_string(),
            "t.json: lever_table_version: version 2 is outside the supported [1, 1]; write it with "
            "this moetune (moetune levers list --json)");
  std::string unknown = text;
  unknown.replace(unknown.find("\"depends_on\""), 12, "\"depend_on\"");
  auto u = parse_lever_table_json(unknown, "t.json");
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.error().to_string().find("did you mean 'depends_on'?"), std::string::npos)
      << u.error().to_string();
  std::string bad_class = text;
  bad_class.replace(bad_class.find("\"bitwise\""), 9, "\"bitwize\"");
  auto c = parse_lever_table_json(bad_class, "t.json");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().to_string(),
            "t.json: levers[0].lever_class: lever class 'bitwize' is not one of bitwise, numeric, "
            "correctness, nondeterministic; did you mean 'bitwise'?");
  auto missing = load_lever_table("/nonexistent/levers.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST(BuiltinLevers, CheckedInTableIsValidAndIsWhatTheBinaryCarries) {
  auto const& t = builtin_lever_table();
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  std::ifstream in(std::string(MOETUNE_SOURCE_DIR) + "/" + kLeverTablePath);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), builtin_lever_table_text()) << "rebuild: the embedded table is stale";
  EXPECT_FALSE(t->deployments.empty());
  for (auto const& l : t->levers) {
    EXPECT_FALSE(l.evidence.check.empty()) << l.name << " has no check behind its class";
  }
}

TEST(BuiltinLevers, EveryMatrixDeploymentResolvesWithAnEmptyEnvironment) {
  auto const& t = builtin_lever_table();
  ASSERT_TRUE(t.ok());
  for (auto const& d : t->deployments) {
    EXPECT_TRUE(resolve_levers(*t, d, {}, {}).ok()) << to_string(d);
  }
}

}  // namespace
}  // namespace moetune::core
