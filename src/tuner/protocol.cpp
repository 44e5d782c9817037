// Worker protocol framing; see protocol.hpp.
#include "tuner/protocol.hpp"

#include <cmath>
#include <cstdlib>

#include "core/json_text.hpp"

namespace moetune::tuner {
namespace {

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
    auto c =
        core::parse_moe_config_json((*items)[i], where + ": configs[" + std::to_string(i) + "]");
    if (!c.ok()) return c.error();
    out.push_back(*c);
  }
  return out;
}

}  // namespace

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
    for (size_t i = 0; i < r.reasons.size(); ++i)
      reasons += (i ? ", " : "") + json_string(r.reasons[i]);
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
