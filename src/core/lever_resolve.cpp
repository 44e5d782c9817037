// Lever resolution (lever_resolve.hpp): environment checks, then one pass in dependency order,
// then exclusions.
#include "core/lever_resolve.hpp"

#include <algorithm>
#include <cstring>

#include "core/names.hpp"

namespace moetune::core {
namespace {

constexpr char kEnv[] = "environment";

Error bad(std::string where, std::string message) {
  return make_error(ErrorCode::kInvalidArgument, std::move(where), std::move(message));
}

std::string join(std::vector<std::string> const& v) {
  std::string out;
  for (auto const& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

/// Rule 1 for one variable: ok when known, else the error.
Status check_variable(LeverTable const& table, std::string const& name, std::string const& value,
                      std::vector<std::string> const& other_vars) {
  for (auto const& r : table.retired) {
    if (r.name == name && r.replacement.empty()) {
      return bad(kEnv, name + " is retired (" + r.reason + "); the lever is gone: unset " + name);
    }
    if (r.name == name) {
      return bad(kEnv, name + " is retired (" + r.reason + "); set " + knob_name(r.replacement) +
                           "=on|off instead and unset " + name);
    }
  }
  if (std::find(other_vars.begin(), other_vars.end(), name) != other_vars.end()) {
    return Status::Ok();
  }
  std::vector<std::string> knobs;
  for (auto const& l : table.levers) knobs.push_back(knob_name(l.name));
  if (std::find(knobs.begin(), knobs.end(), name) != knobs.end()) {
    if (value == "on" || value == "off") return Status::Ok();
    return bad(kEnv, name + " = '" + value + "' is not a knob value; expected on or off");
  }
  std::vector<std::string> known = knobs;
  for (auto const& v : other_vars) {
    if (v.find('<') == std::string::npos) known.push_back(v);
  }
  for (auto const& r : table.retired) known.push_back(r.name);
  if (name.starts_with(kLeverKnobPrefix)) {
    return bad(kEnv, name + " is not a lever knob; expected one of " + join(knobs) +
                         " (moetune levers list); unset it" + did_you_mean(name, known));
  }
  std::vector<std::string> others;
  for (auto const& v : other_vars) {
    if (v.find('<') == std::string::npos) others.push_back(v);
  }
  return bad(kEnv, name + " is not a moetune variable; expected a lever knob " +
                       std::string(kLeverKnobPrefix) + "<NAME> or one of " + join(others) +
                       "; unset it" + did_you_mean(name, known));
}

std::string default_rule(Lever const& l, Deployment const& d, bool* on) {
  int const clause = matching_clause(l.default_on, d);
  *on = clause >= 0;
  if (*on) return "default: on where " + to_string(l.default_on[clause]);
  if (l.default_on.empty()) return "default: off (knob only)";
  return "default: off (on only where " + to_string(l.default_on) + ")";
}

}  // namespace

EnvSnapshot snapshot_environment(char const* const* envp) {
  EnvSnapshot env;
  for (; envp != nullptr && *envp != nullptr; ++envp) {
    std::string_view const entry(*envp);
    if (!entry.starts_with("MOETUNE_")) continue;
    size_t const eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  return env;
}

std::string_view to_string(LeverDecision d) {
  switch (d) {
    case LeverDecision::kDefault: return "default";
    case LeverDecision::kKnob: return "knob";
    case LeverDecision::kNotServed: return "not_served";
    case LeverDecision::kDependency: return "dependency";
  }
  return "?";
}

ResolvedLever const* LeverResolution::find(std::string_view name) const {
  for (auto const& l : levers) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

std::vector<std::string> LeverResolution::on_names() const {
  std::vector<std::string> out;
  for (auto const& l : levers) {
    if (l.on) out.push_back(l.name);
  }
  return out;
}

Result<LeverResolution> resolve_levers(LeverTable const& table, Deployment const& deployment,
                                       EnvSnapshot const& env,
                                       std::vector<std::string> const& other_vars) {
  for (auto const& [name, value] : env) {
    if (!name.starts_with("MOETUNE_")) continue;
    MOETUNE_RETURN_IF_ERROR(check_variable(table, name, value, other_vars));
  }
  std::string const at = to_string(deployment);
  std::map<std::string, ResolvedLever> decided;
  for (auto const& name : dependency_order(table)) {
    Lever const& l = *table.find(name);
    std::string const knob = knob_name(l.name);
    auto const knob_it = env.find(knob);
    ResolvedLever r;
    r.name = l.name;
    if (!matches(l.served_at, deployment)) {
      if (knob_it != env.end()) {
        return bad(kEnv, knob + "=" + knob_it->second + " is refused at " + at + ": lever '" +
                             l.name + "' is served only where " + to_string(l.served_at) +
                             "; unset " + knob);
      }
      r.decided_by = LeverDecision::kNotServed;
      r.rule = "not served here (served where " + to_string(l.served_at) + ")";
    } else if (knob_it != env.end()) {
      r.on = knob_it->second == "on";
      r.decided_by = LeverDecision::kKnob;
      r.rule = "knob: " + knob + "=" + knob_it->second;
    } else {
      r.decided_by = LeverDecision::kDefault;
      r.rule = default_rule(l, deployment, &r.on);
    }
    for (auto const& dep : l.depends_on) {
      ResolvedLever const& d = decided.at(dep);
      if (r.on && !d.on) {
        r.on = false;
        r.decided_by = LeverDecision::kDependency;
        r.rule = "off: depends on '" + dep + "', which is off (" + d.rule + ")";
      }
    }
    decided.emplace(l.name, std::move(r));
  }
  LeverResolution out;
  out.deployment = deployment;
  for (auto const& l : table.levers) out.levers.push_back(decided.at(l.name));
  for (auto const& l : table.levers) {
    for (auto const& other : l.exclusive_with) {
      ResolvedLever const& a = decided.at(l.name);
      ResolvedLever const& b = decided.at(other);
      if (a.on && b.on) {
        return bad("levers at " + at, "'" + a.name + "' (" + a.rule + ") and '" + b.name + "' (" +
                                          b.rule + ") are both on but exclusive; set " +
                                          knob_name(a.name) + "=off or " + knob_name(b.name) +
                                          "=off");
      }
    }
  }
  return out;
}

}  // namespace moetune::core
