// Worker protocol framing; see protocol.hpp.
#include "tuner/protocol.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/json_text.hpp"

namespace moetune::tuner {
namespace {

core::Error parse_error(std::string const& where, std::string message) {
  return core::make_error(core::ErrorCode::kParse, where, std::move(message));
}

size_t skip_ws(std::string_view t, size_t i) {
  while (i < t.size() && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) ++i;
  return i;
}

/// End (one past) of the JSON value starting at t[i], or npos when malformed.
size_t value_end(std::string_view t, size_t i) {
  if (i >= t.size()) return std::string_view::npos;
  if (t[i] == '"') {
    for (size_t j = i + 1; j < t.size(); ++j) {
      if (t[j] == '\\') {
        ++j;
      } else if (t[j] == '"') {
        return j + 1;
      }
    }
    return std::string_view::npos;
  }
  if (t[i] == '{' || t[i] == '[') {
    int depth = 0;
    for (size_t j = i; j < t.size(); ++j) {
      char const c = t[j];
      if (c == '"') {
        j = value_end(t, j);
        if (j == std::string_view::npos) return j;
        --j;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return j + 1;
      }
    }
    return std::string_view::npos;
  }
  size_t j = i;
  while (j < t.size() && t[j] != ',' && t[j] != '}' && t[j] != ']' && t[j] != ' ') ++j;
  return j == i ? std::string_view::npos : j;
}

/// Appends `"key": value` to an object under construction.
void add(std::string& out, char const* key, std::string const& value) {
  out += (out.size() > 1 ? ", " : "") + json_string(key) + ": " + value;
}

std::string configs_text(std::vector<core::MoeConfig> const& configs) {
  std::string out = "[";
  for (size_t i = 0; i < configs.size(); ++i) {
    out += (i ? ", " : "") + core::to_json_text(configs[i], -1);
  }
  return out + "]";
}

core::Result<std::vector<core::MoeConfig>> parse_configs(std::string_view raw,
                                                         std::string const& where) {
  auto items = FlatJson::split_array(raw, where);
  if (!items.ok()) return items.error();
  std::vector<core::MoeConfig> out;
  for (size_t i = 0; i < items->size(); ++i) {
    auto c = core::parse_moe_config_json((*items)[i], where + ": configs[" + std::to_string(i) + "]");
    if (!c.ok()) return c.error();
    out.push_back(*c);
  }
  return out;
}

}  // namespace

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_double(double v) {
  if (!std::isfinite(v)) return "null";
  for (int precision = 1; precision <= 17; ++precision) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) return buf;
  }
  return "null";
}

std::string json_doubles(std::vector<double> const& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + json_double(v[i]);
  return out + "]";
}

core::Result<std::vector<double>> parse_doubles(std::string_view raw, std::string const& where) {
  auto items = FlatJson::split_array(raw, where);
  if (!items.ok()) return items.error();
  std::vector<double> out;
  for (std::string const& item : *items) {
    if (item == "null") {
      out.push_back(NAN);
      continue;
    }
    char* end = nullptr;
    double const v = std::strtod(item.c_str(), &end);
    if (end != item.c_str() + item.size()) {
      return parse_error(where, "array element '" + item + "' is not a number");
    }
    out.push_back(v);
  }
  return out;
}

core::Result<FlatJson> FlatJson::parse(std::string_view t, std::string const& where) {
  FlatJson out;
  out.where_ = where;
  size_t i = skip_ws(t, 0);
  if (i >= t.size() || t[i] != '{') return parse_error(where, "expected a JSON object");
  i = skip_ws(t, i + 1);
  if (i < t.size() && t[i] == '}') return out;
  while (true) {
    size_t const key_end = value_end(t, i);
    if (i >= t.size() || t[i] != '"' || key_end == std::string_view::npos) {
      return parse_error(where, "expected a string key at offset " + std::to_string(i));
    }
    auto key = unquote(t.substr(i, key_end - i), where);
    if (!key.ok()) return key.error();
    i = skip_ws(t, key_end);
    if (i >= t.size() || t[i] != ':') return parse_error(where, "expected ':' after " + *key);
    i = skip_ws(t, i + 1);
    size_t const end = value_end(t, i);
    if (end == std::string_view::npos) return parse_error(where, "malformed value of " + *key);
    if (!out.fields_.emplace(*key, std::string(t.substr(i, end - i))).second) {
      return parse_error(where, "duplicate key '" + *key + "'");
    }
    i = skip_ws(t, end);
    if (i < t.size() && t[i] == ',') {
      i = skip_ws(t, i + 1);
      continue;
    }
    if (i < t.size() && t[i] == '}' && skip_ws(t, i + 1) == t.size()) return out;
    return parse_error(where, "expected ',' or a final '}' at offset " + std::to_string(i));
  }
}

core::Result<std::vector<std::string>> FlatJson::split_array(std::string_view t,
                                                             std::string const& where) {
  std::vector<std::string> out;
  size_t i = skip_ws(t, 0);
  if (i >= t.size() || t[i] != '[') return parse_error(where, "expected a JSON array");
  i = skip_ws(t, i + 1);
  if (i < t.size() && t[i] == ']') return out;
  while (true) {
    size_t const end = value_end(t, i);
    if (end == std::string_view::npos) return parse_error(where, "malformed array element");
    out.emplace_back(t.substr(i, end - i));
    i = skip_ws(t, end);
    if (i < t.size() && t[i] == ',') {
      i = skip_ws(t, i + 1);
      continue;
    }
    if (i < t.size() && t[i] == ']') return out;
    return parse_error(where, "expected ',' or ']' in an array");
  }
}

core::Result<std::string> FlatJson::unquote(std::string_view raw, std::string const& where) {
  if (raw.size() < 2 || raw.front() != '"' || raw.back() != '"') {
    return parse_error(where, "expected a string, saw " + std::string(raw.substr(0, 40)));
  }
  std::string out;
  for (size_t i = 1; i + 1 < raw.size(); ++i) {
    char c = raw[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    if (i + 2 >= raw.size()) return parse_error(where, "dangling escape in a string");
    c = raw[++i];
    switch (c) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'u': {
        if (i + 4 >= raw.size()) return parse_error(where, "short \\u escape");
        unsigned const code = std::strtoul(std::string(raw.substr(i + 1, 4)).c_str(), nullptr, 16);
        i += 4;
        if (code < 0x80) {
          out += static_cast<char>(code);
        } else if (code < 0x800) {
          out += static_cast<char>(0xC0 | (code >> 6));
          out += static_cast<char>(0x80 | (code & 0x3F));
        } else {
          out += static_cast<char>(0xE0 | (code >> 12));
          out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (code & 0x3F));
        }
        break;
      }
      default: out += c;  // '"', '\\', '/'
    }
  }
  return out;
}

core::Error FlatJson::missing(std::string const& key) const {
  return parse_error(where_, "missing field '" + key + "'");
}

core::Result<std::string> FlatJson::string(std::string const& key) const {
  if (!has(key)) return missing(key);
  return unquote(raw(key), where_ + ": " + key);
}

core::Result<double> FlatJson::number(std::string const& key) const {
  if (!has(key)) return missing(key);
  std::string const& text = raw(key);
  if (text == "null") return NAN;
  char* end = nullptr;
  double const v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) {
    return parse_error(where_, "field '" + key + "' is '" + text + "', not a number");
  }
  return v;
}

core::Result<bool> FlatJson::boolean(std::string const& key) const {
  if (!has(key)) return missing(key);
  if (raw(key) == "true") return true;
  if (raw(key) == "false") return false;
  return parse_error(where_, "field '" + key + "' is '" + raw(key) + "', not true or false");
}

std::string encode(Request const& r) {
  std::string out = "{";
  add(out, "op", json_string(r.op));
  if (r.op == "space" || r.op == "feasible" || r.op == "prepare") {
    add(out, "problem", core::to_json_text(r.problem, -1));
  }
  if (r.op == "feasible") add(out, "configs", configs_text(r.configs));
  if (r.op == "prepare") {
    add(out, "routing", core::to_json_text(r.routing, -1));
    add(out, "seed", std::to_string(r.seed));
  }
  if (r.op == "check" || r.op == "time") {
    add(out, "config", core::to_json_text(r.config, -1));
    add(out, "fault", json_string(to_string(r.fault)));
  }
  if (r.op == "time") {
    add(out, "warmup", std::to_string(r.warmup));
    add(out, "reps", std::to_string(r.reps));
  }
  return out + "}";
}

core::Result<Request> decode_request(std::string_view line, std::string const& where) {
  auto j = FlatJson::parse(line, where);
  if (!j.ok()) return j.error();
  Request r;
  auto op = j->string("op");
  if (!op.ok()) return op.error();
  r.op = *op;
  if (j->has("problem")) {
    auto p = core::parse_moe_problem_json(j->raw("problem"), where + ": problem");
    if (!p.ok()) return p.error();
    r.problem = *p;
  }
  if (j->has("routing")) {
    auto p = core::parse_routing_profile_json(j->raw("routing"), where + ": routing");
    if (!p.ok()) return p.error();
    r.routing = *p;
  }
  if (j->has("seed")) r.seed = std::strtoull(j->raw("seed").c_str(), nullptr, 10);
  if (j->has("config")) {
    auto c = core::parse_moe_config_json(j->raw("config"), where + ": config");
    if (!c.ok()) return c.error();
    r.config = *c;
  }
  if (j->has("configs")) {
    auto c = parse_configs(j->raw("configs"), where);
    if (!c.ok()) return c.error();
    r.configs = std::move(c).value();
  }
  if (j->has("fault")) {
    auto f = j->string("fault");
    if (!f.ok()) return f.error();
    if (!f->empty()) {
      auto kind = parse_fault_kind(*f);
      if (!kind.ok()) return kind.error();
      r.fault = *kind;
    }
  }
  if (j->has("warmup")) r.warmup = static_cast<int>(*j->number("warmup"));
  if (j->has("reps")) r.reps = static_cast<int>(*j->number("reps"));
  return r;
}

std::string encode(Response const& r) {
  std::string out = "{";
  add(out, "ok", r.ok ? "true" : "false");
  if (!r.ok) {
    add(out, "outcome", json_string(to_string(r.outcome)));
    add(out, "message", json_string(r.message));
    return out + "}";
  }
  if (!r.backend.empty()) {
    add(out, "protocol_version", std::to_string(r.protocol_version));
    add(out, "backend", json_string(r.backend));
    add(out, "family", json_string(r.family));
    add(out, "family_version", std::to_string(r.family_version));
    add(out, "device", core::to_json_text(r.device, -1));
  }
  if (!r.configs.empty()) {
    add(out, "default_config", core::to_json_text(r.default_config, -1));
    add(out, "configs", configs_text(r.configs));
  }
  if (!r.reasons.empty()) {
    std::string reasons = "[";
    for (size_t i = 0; i < r.reasons.size(); ++i) reasons += (i ? ", " : "") + json_string(r.reasons[i]);
    add(out, "reasons", reasons + "]");
  }
  if (r.has_check) {
    add(out, "rel_l2_error", json_double(r.check.rel_l2_error));
    add(out, "all_finite", r.check.all_finite ? "true" : "false");
    add(out, "all_written", r.check.all_written ? "true" : "false");
    add(out, "digest", json_string(r.check.digest));
    add(out, "first_bad", std::to_string(r.check.first_bad));
  }
  if (!r.samples_us.empty()) add(out, "samples_us", json_doubles(r.samples_us));
  return out + "}";
}

core::Result<Response> decode_response(std::string_view line, std::string const& where) {
  auto j = FlatJson::parse(line, where);
  if (!j.ok()) return j.error();
  Response r;
  auto ok = j->boolean("ok");
  if (!ok.ok()) return ok.error();
  r.ok = *ok;
  if (!r.ok) {
    auto outcome = j->string("outcome");
    if (!outcome.ok()) return outcome.error();
    auto parsed = parse_outcome(*outcome);
    if (!parsed.ok()) return parsed.error();
    r.outcome = *parsed;
    auto message = j->string("message");
    if (!message.ok()) return message.error();
    r.message = *message;
    return r;
  }
  if (j->has("backend")) {
    r.protocol_version = static_cast<int>(j->number("protocol_version").value());
    r.backend = j->string("backend").value();
    r.family = j->string("family").value();
    r.family_version = static_cast<int>(j->number("family_version").value());
    auto d = core::parse_device_info_json(j->raw("device"), where + ": device");
    if (!d.ok()) return d.error();
    r.device = *d;
  }
  if (j->has("configs")) {
    auto d = core::parse_moe_config_json(j->raw("default_config"), where + ": default_config");
    if (!d.ok()) return d.error();
    r.default_config = *d;
    auto c = parse_configs(j->raw("configs"), where);
    if (!c.ok()) return c.error();
    r.configs = std::move(c).value();
  }
  if (j->has("reasons")) {
    auto items = FlatJson::split_array(j->raw("reasons"), where + ": reasons");
    if (!items.ok()) return items.error();
    for (std::string const& item : *items) {
      auto s = FlatJson::unquote(item, where + ": reasons");
      if (!s.ok()) return s.error();
      r.reasons.push_back(*s);
    }
  }
  if (j->has("digest")) {
    r.has_check = true;
    r.check.digest = j->string("digest").value();
    r.check.rel_l2_error = j->number("rel_l2_error").value();
    r.check.all_finite = j->boolean("all_finite").value();
    r.check.all_written = j->boolean("all_written").value();
    r.check.first_bad = static_cast<int64_t>(j->number("first_bad").value());
  }
  if (j->has("samples_us")) {
    auto s = parse_doubles(j->raw("samples_us"), where + ": samples_us");
    if (!s.ok()) return s.error();
    r.samples_us = std::move(s).value();
  }
  return r;
}

}  // namespace moetune::tuner
