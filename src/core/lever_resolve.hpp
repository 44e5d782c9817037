// Lever resolution: a lever table + a Deployment + one snapshot of the environment -> the
// resolved fast-path set, each lever with the rule that decided it. Rules, in order:
//   1. every MOETUNE_* variable must be known: a lever knob (on|off), a retired name (error that
//      names the replacement knob) or one of the project's other variables (the CLI env table);
//      anything else is an error with "did you mean";
//   2. a lever not served at the deployment is off; a knob for it is refused with the reason;
//   3. a knob decides a served lever; else its default rule does;
//   4. a lever whose dependency resolved off is off, with the reason (in dependency order);
//   5. two exclusive levers both on is an error.
// Errors are one line: where ("environment", or "levers at <deployment>"), what, seen vs
// expected, what to do. Tests: tests/core/lever_resolve_test.cpp (every message verbatim).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/lever.hpp"
#include "core/result.hpp"

namespace moetune::core {

/// The MOETUNE_* variables of one process, read once (name -> value).
using EnvSnapshot = std::map<std::string, std::string>;

/// The MOETUNE_* entries of `environ`-style "NAME=VALUE" strings (null-terminated array).
EnvSnapshot snapshot_environment(char const* const* envp);

/// What decided a lever.
enum class LeverDecision {
  kDefault,     ///< the lever's default_on rule
  kKnob,        ///< its MOETUNE_LEVER_<NAME> knob
  kNotServed,   ///< served_at does not include the deployment
  kDependency,  ///< a lever it depends on resolved off
};
std::string_view to_string(LeverDecision d);

/// One lever's outcome.
struct ResolvedLever {
  std::string name;
  bool on = false;
  LeverDecision decided_by = LeverDecision::kDefault;
  std::string rule;  ///< the rule in words: "default: on where backend=cuda", ...

  bool operator==(ResolvedLever const&) const = default;
};

/// The resolved fast-path set at one deployment, levers in table order.
struct LeverResolution {
  Deployment deployment;
  std::vector<ResolvedLever> levers;

  bool operator==(LeverResolution const&) const = default;
  /// The lever `name`, or nullptr.
  ResolvedLever const* find(std::string_view name) const;
  /// Names of the levers that are on, in table order.
  std::vector<std::string> on_names() const;
};

/// Resolves `table` at `deployment` under `env`. `other_vars` are the project's non-lever
/// MOETUNE_* variables (the CLI env table; entries containing '<' are patterns and ignored).
/// Assumes validate(table) and validate(deployment) passed. Fails (kInvalidArgument) by rules
/// 1, 2 and 5 above.
Result<LeverResolution> resolve_levers(LeverTable const& table, Deployment const& deployment,
                                       EnvSnapshot const& env,
                                       std::vector<std::string> const& other_vars);

}  // namespace moetune::core
