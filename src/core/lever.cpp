// Lever data types: Deployment text, condition matching and table validation (lever.hpp).
#include "core/lever.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "core/names.hpp"

namespace moetune::core {
namespace {

std::vector<std::string> const kBackends = {"cpu", "cuda"};
std::vector<std::string> const kArchs = {"cpu", "sm80", "sm90", "sm100"};
std::vector<std::string> const kDtypes = {"bf16", "fp16", "fp32"};
std::vector<std::string> const kRoles = {"prefill", "decode"};

Error bad(std::string const& where, std::string message) {
  return make_error(ErrorCode::kInvalidArgument, where, std::move(message));
}

std::string join(std::vector<std::string> const& v, std::string const& sep) {
  std::string out;
  for (auto const& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

bool parse_int(std::string_view text, int* out) {
  auto const* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && !text.empty();
}

Status check_in(std::string const& where, std::string const& key, std::string const& value,
                std::vector<std::string> const& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return Status::Ok();
  return bad(where, key + " = '" + value + "' is not one of " + join(allowed, ", ") +
                        did_you_mean(value, allowed));
}

/// True when `alt` ("8", ">=8", "<=2") admits `value` for an integer key.
bool int_alternative_matches(std::string const& alt, int value) {
  int bound = 0;
  if (alt.starts_with(">=") && parse_int(std::string_view(alt).substr(2), &bound)) {
    return value >= bound;
  }
  if (alt.starts_with("<=") && parse_int(std::string_view(alt).substr(2), &bound)) {
    return value <= bound;
  }
  return parse_int(alt, &bound) && value == bound;
}

bool clause_matches(LeverClause const& clause, Deployment const& d) {
  for (auto const& [key, alternatives] : clause) {
    bool const is_int = key == "tp" || key == "ep";
    std::string const value = deployment_value(d, key);
    bool any = false;
    for (auto const& alt : alternatives) {
      any =
          any || (is_int ? int_alternative_matches(alt, key == "tp" ? d.tp : d.ep) : alt == value);
    }
    if (!any) return false;
  }
  return true;
}

Status validate_condition(LeverCondition const& c, std::string const& where) {
  for (auto const& clause : c) {
    for (auto const& [key, alternatives] : clause) {
      if (deployment_value(Deployment{}, key).empty()) {
        return bad(where, "condition key '" + key + "' is not a deployment key; expected one of " +
                              join(deployment_keys(), ", ") + did_you_mean(key, deployment_keys()));
      }
      if (alternatives.empty()) {
        return bad(where, "condition key '" + key + "' lists no values; list at least one");
      }
      for (auto const& alt : alternatives) {
        int bound = 0;
        bool const ok_int =
            parse_int(alt, &bound) || ((alt.starts_with(">=") || alt.starts_with("<=")) &&
                                       parse_int(std::string_view(alt).substr(2), &bound));
        if ((key == "tp" || key == "ep") && !ok_int) {
          return bad(where, key + " alternative '" + alt +
                                "' is not an integer, '>=N' or '<=N'; write e.g. \"8\" or \">=8\"");
        }
      }
    }
  }
  return Status::Ok();
}

bool valid_lever_name(std::string const& n) {
  if (n.empty() || !std::islower(static_cast<unsigned char>(n[0]))) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c)) || c == '_';
  });
}

}  // namespace

std::string_view to_string(LeverClass c) {
  switch (c) {
    case LeverClass::kBitwise: return "bitwise";
    case LeverClass::kNumeric: return "numeric";
    case LeverClass::kCorrectness: return "correctness";
    case LeverClass::kNondeterministic: return "nondeterministic";
  }
  return "?";
}

Result<LeverClass> parse_lever_class(std::string_view text) {
  std::vector<std::string> names;
  for (auto c : {LeverClass::kBitwise, LeverClass::kNumeric, LeverClass::kCorrectness,
                 LeverClass::kNondeterministic}) {
    if (text == to_string(c)) return c;
    names.emplace_back(to_string(c));
  }
  return bad("", "lever class '" + std::string(text) +
                     "' is not one of bitwise, numeric, correctness, nondeterministic" +
                     did_you_mean(text, names));
}

std::vector<std::string> const& deployment_keys() {
  static std::vector<std::string> const keys = {"backend", "arch", "tp", "ep", "dtype", "role"};
  return keys;
}

std::string deployment_value(Deployment const& d, std::string_view key) {
  if (key == "backend") return d.backend;
  if (key == "arch") return d.arch;
  if (key == "tp") return std::to_string(d.tp);
  if (key == "ep") return std::to_string(d.ep);
  if (key == "dtype") return d.dtype;
  if (key == "role") return d.role;
  return "";
}

std::string to_string(Deployment const& d) {
  std::string out;
  for (auto const& key : deployment_keys()) {
    out += (out.empty() ? "" : ",") + key + "=" + deployment_value(d, key);
  }
  return out;
}

Status validate(Deployment const& d, std::string const& where) {
  MOETUNE_RETURN_IF_ERROR(check_in(where, "backend", d.backend, kBackends));
  MOETUNE_RETURN_IF_ERROR(check_in(where, "arch", d.arch, kArchs));
  MOETUNE_RETURN_IF_ERROR(check_in(where, "dtype", d.dtype, kDtypes));
  MOETUNE_RETURN_IF_ERROR(check_in(where, "role", d.role, kRoles));
  if (d.tp < 1 || d.ep < 1) {
    return bad(where, "tp = " + std::to_string(d.tp) + ", ep = " + std::to_string(d.ep) +
                          " must both be >= 1");
  }
  if ((d.backend == "cpu") != (d.arch == "cpu")) {
    return bad(where, "backend = " + d.backend + " with arch = " + d.arch +
                          " does not exist; arch is cpu exactly when backend is cpu");
  }
  return Status::Ok();
}

Result<Deployment> parse_deployment(std::string_view text, std::string const& where) {
  Deployment d;
  std::set<std::string> seen;
  size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    size_t const comma = std::min(text.find(',', pos), text.size());
    std::string const item(text.substr(pos, comma - pos));
    size_t const eq = item.find('=');
    if (eq == std::string::npos) {
      return bad(where, "'" + item + "' is not KEY=VAL; write e.g. " + to_string(Deployment{}));
    }
    std::string const key = item.substr(0, eq);
    std::string const value = item.substr(eq + 1);
    if (deployment_value(d, key).empty()) {
      return bad(where, "unknown deployment key '" + key + "'; expected one of " +
                            join(deployment_keys(), ", ") + did_you_mean(key, deployment_keys()));
    }
    if (!seen.insert(key).second) {
      return bad(where, "deployment key '" + key + "' is given twice; give each key once");
    }
    if (key == "tp" || key == "ep") {
      int n = 0;
      if (!parse_int(value, &n)) {
        return bad(where, key + " = '" + value + "' is not an integer; write e.g. " + key + "=8");
      }
      (key == "tp" ? d.tp : d.ep) = n;
    } else {
      (key == "backend" ? d.backend
       : key == "arch"  ? d.arch
       : key == "dtype" ? d.dtype
                        : d.role) = value;
    }
    pos = comma + 1;
  }
  for (auto const& key : deployment_keys()) {
    if (!seen.contains(key)) {
      return bad(where, "deployment lacks key '" + key + "'; give all of " +
                            join(deployment_keys(), ", ") + ", e.g. " + to_string(Deployment{}));
    }
  }
  MOETUNE_RETURN_IF_ERROR(validate(d, where));
  return d;
}

int matching_clause(LeverCondition const& c, Deployment const& d) {
  for (size_t i = 0; i < c.size(); ++i) {
    if (clause_matches(c[i], d)) return static_cast<int>(i);
  }
  return -1;
}

bool matches(LeverCondition const& c, Deployment const& d) { return matching_clause(c, d) >= 0; }

std::string to_string(LeverClause const& c) {
  if (c.empty()) return "everywhere";
  std::string out;
  // Deployment key order, not map order, so the text reads like a deployment.
  for (auto const& key : deployment_keys()) {
    auto it = c.find(key);
    if (it == c.end()) continue;
    std::string const term = it->second.size() == 1 && !it->second[0].starts_with(">=") &&
                                     !it->second[0].starts_with("<=")
                                 ? key + "=" + it->second[0]
                                 : key + " in {" + join(it->second, ",") + "}";
    out += (out.empty() ? "" : " and ") + term;
  }
  return out;
}

std::string to_string(LeverCondition const& c) {
  if (c.empty()) return "nowhere";
  std::vector<std::string> parts;
  for (auto const& clause : c) {
    if (clause.empty()) return "everywhere";
    parts.push_back(to_string(clause));
  }
  return join(parts, " or ");
}

Lever const* LeverTable::find(std::string_view name) const {
  for (auto const& l : levers) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

std::string knob_name(std::string_view lever_name) {
  std::string out = kLeverKnobPrefix;
  for (char c : lever_name) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::vector<std::string> dependency_order(LeverTable const& t) {
  std::vector<std::string> order;
  std::set<std::string> placed;
  // Repeated passes in table order: each pass places every lever whose dependencies are placed.
  while (order.size() < t.levers.size()) {
    size_t const before = order.size();
    for (auto const& l : t.levers) {
      if (placed.contains(l.name)) continue;
      bool ready = std::all_of(l.depends_on.begin(), l.depends_on.end(),
                               [&](std::string const& d) { return placed.contains(d); });
      if (ready) {
        order.push_back(l.name);
        placed.insert(l.name);
      }
    }
    if (order.size() == before) break;  // a cycle; validate() reports it
  }
  return order;
}

Status validate(LeverTable const& t, std::string const& where) {
  std::vector<std::string> names;
  for (auto const& l : t.levers) names.push_back(l.name);
  std::set<std::string> seen;
  for (auto const& l : t.levers) {
    std::string const at = where + ": levers." + l.name;
    if (!valid_lever_name(l.name)) {
      return bad(where, "lever name '" + l.name +
                            "' is not lower_snake_case ([a-z][a-z0-9_]*); rename it");
    }
    if (!seen.insert(l.name).second) {
      return bad(where, "lever '" + l.name + "' is declared twice; keep one entry");
    }
    for (auto const* list : {&l.depends_on, &l.exclusive_with}) {
      char const* field = list == &l.depends_on ? "depends_on" : "exclusive_with";
      for (auto const& other : *list) {
        if (other == l.name) {
          return bad(at, std::string(field) + " names the lever itself; remove '" + other + "'");
        }
        if (t.find(other) == nullptr) {
          return bad(at, std::string(field) + " names '" + other + "', which is no lever" +
                             did_you_mean(other, names));
        }
      }
    }
    MOETUNE_RETURN_IF_ERROR(validate_condition(l.served_at, at + ".served_at"));
    MOETUNE_RETURN_IF_ERROR(validate_condition(l.default_on, at + ".default_on"));
    if (l.lever_class == LeverClass::kNondeterministic && !l.default_on.empty()) {
      return bad(at + ".default_on",
                 "a nondeterministic lever is on by default at " + to_string(l.default_on) +
                     "; the default path must give the same bits every run: set default_on to []");
    }
  }
  if (dependency_order(t).size() != t.levers.size()) {
    return bad(where, "depends_on has a cycle; a lever cannot depend on itself through others");
  }
  for (auto const& r : t.retired) {
    if (!r.name.starts_with("MOETUNE_")) {
      return bad(where, "retired name '" + r.name +
                            "' does not start with MOETUNE_; write the "
                            "full variable name");
    }
    for (auto const& l : t.levers) {
      if (knob_name(l.name) == r.name) {
        return bad(where, "retired name '" + r.name + "' is the live knob of lever '" + l.name +
                              "'; remove one of them");
      }
    }
    if (!r.replacement.empty() && t.find(r.replacement) == nullptr) {
      return bad(where, "retired name '" + r.name + "' names replacement '" + r.replacement +
                            "', which is no lever" + did_you_mean(r.replacement, names));
    }
  }
  for (size_t i = 0; i < t.deployments.size(); ++i) {
    MOETUNE_RETURN_IF_ERROR(
        validate(t.deployments[i], where + ": deployments[" + std::to_string(i) + "]"));
  }
  return Status::Ok();
}

}  // namespace moetune::core
