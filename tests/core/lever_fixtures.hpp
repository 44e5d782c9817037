// A small lever table that exercises every rule: a default by backend, a knob-only lever listed
// before the lever it depends on, a tp-bounded default, an exclusive pair, a lever served only at
// prefill, and a retired name. Shared by the lever tests (core and cli).
#pragma once

#include <string>
#include <vector>

#include "core/lever.hpp"

namespace moetune::testing {

inline core::Lever test_lever(std::string name, core::LeverCondition served,
                              core::LeverCondition default_on) {
  core::Lever l;
  l.name = std::move(name);
  l.description = "test lever " + l.name;
  l.served_at = std::move(served);
  l.default_on = std::move(default_on);
  l.evidence = {.check = "tests/core/lever_resolve_test.cpp: Test.Name",
                .runs_on = "cpu",
                .claim = "bits equal",
                .result = ""};
  return l;
}

/// b (knob only, needs a) | a (on at cuda) | c (on at tp >= 8, excludes d) | d (knob only) |
/// e (served at prefill only, on there). Retired: MOETUNE_OLD_B -> b.
inline core::LeverTable rule_table() {
  core::LeverTable t;
  core::Lever b = test_lever("b", {{}}, {});
  b.depends_on = {"a"};
  core::Lever c = test_lever("c", {{}}, {{{"tp", {">=8"}}}});
  c.exclusive_with = {"d"};
  c.lever_class = core::LeverClass::kNumeric;
  core::Lever d = test_lever("d", {{}}, {});
  d.lever_class = core::LeverClass::kCorrectness;
  t.levers = {b, test_lever("a", {{}}, {{{"backend", {"cuda"}}}}), c, d,
              test_lever("e", {{{"role", {"prefill"}}}}, {{}})};
  t.retired = {{.name = "MOETUNE_OLD_B", .replacement = "b", .reason = "renamed to lever b"}};
  t.deployments = {
      core::Deployment{},
      core::Deployment{.tp = 8, .ep = 8},
      core::Deployment{.backend = "cpu", .arch = "cpu", .dtype = "fp32", .role = "prefill"},
  };
  return t;
}

/// The non-lever variables the resolver is told about (the CLI passes its env table).
inline std::vector<std::string> other_vars() {
  return {"MOETUNE_BACKEND", "MOETUNE_CACHE_DIR", "MOETUNE_LEVER_<NAME>"};
}

}  // namespace moetune::testing
