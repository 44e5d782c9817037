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

std::string kernel_configs_text(std::vector<core::KernelConfig> const& configs) {
  std::string out = "[";
  for (size_t i = 0; i < configs.size(); ++i) {
    out += (i ? ", " : "") + core::to_json_text(configs[i], -1);
  }
  return out + "]";
}

std::string gemm_spaces_text(std::vector<core::GemmSpace> const& spaces) {
  std::string out = "[";
  for (size_t i = 0; i < spaces.size(); ++i) {
    core::GemmSpace const& s = spaces[i];
    std::string item = "{";
    add(item, "block_m", std::to_string(s.block_m));
    add(item, "base", core::to_json_text(s.base, -1));
    add(item, "gemm1", kernel_configs_text(s.gemm1));
    add(item, "gemm2", kernel_configs_text(s.gemm2));
    out += (i ? ", " : "") + item + "}";
  }
  return out + "]";
}

core::Result<std::vector<core::KernelConfig>> parse_kernel_configs(std::string_view raw,
                                                                   std::string const& where) {
  auto items = FlatJson::split_array(raw, where);
  if (!items.ok()) return items.error();
  std::vector<core::KernelConfig> out;
  for (size_t i = 0; i < items->size(); ++i) {
    auto k = core::parse_kernel_config_json((*items)[i], where + "[" + std::to_string(i) + "]");
    if (!k.ok()) return k.error();
    out.push_back(*k);
  }
  return out;
}

core::Result<std::vector<core::GemmSpace>> parse_gemm_spaces(std::string_view raw,
                                                             std::string const& where) {
  auto items = FlatJson::split_array(raw, where + ": gemm_spaces");
  if (!items.ok()) return items.error();
  std::vector<core::GemmSpace> out;
  for (size_t i = 0; i < items->size(); ++i) {
    std::string const at = where + ": gemm_spaces[" + std::to_string(i) + "]";
    auto j = FlatJson::parse((*items)[i], at);
    if (!j.ok()) return j.error();
    core::GemmSpace s;
    auto bm = j->number("block_m");
    if (!bm.ok()) return bm.error();
    s.block_m = static_cast<int>(*bm);
    if (!j->has("base") || !j->has("gemm1") || !j->has("gemm2")) {
      return core::make_error(core::ErrorCode::kParse, at, "needs base, gemm1 and gemm2");
    }
    auto base = core::parse_moe_config_json(j->raw("base"), at + ": base");
    if (!base.ok()) return base.error();
    s.base = *base;
    auto g1 = parse_kernel_configs(j->raw("gemm1"), at + ": gemm1");
    if (!g1.ok()) return g1.error();
    s.gemm1 = std::move(g1).value();
    auto g2 = parse_kernel_configs(j->raw("gemm2"), at + ": gemm2");
    if (!g2.ok()) return g2.error();
    s.gemm2 = std::move(g2).value();
    out.push_back(std::move(s));
  }
  return out;
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
  if (r.op == "feasible" || r.op == "precompile") add(out, "configs", configs_text(r.configs));
  if (r.op == "precompile") {
    std::string faults = "[";
    for (size_t i = 0; i < r.faults.size(); ++i) {
      faults += (i ? ", " : "") + json_string(to_string(r.faults[i]));
    }
    add(out, "faults", faults + "]");
    if (r.background) add(out, "background", "true");
  }
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

namespace {

/// A request's test-only faults: "fault" (one, for check / time / precompile) and "faults" (one
/// per config of a precompile); "" is none.
core::Status decode_faults(FlatJson const& j, std::string const& where, Request& r) {
  if (j.has("fault")) {
    auto f = j.string("fault");
    if (!f.ok()) return f.error();
    if (!f->empty()) {
      auto kind = parse_fault_kind(*f);
      if (!kind.ok()) return kind.error();
      r.fault = *kind;
    }
  }
  if (!j.has("faults")) return core::Status::Ok();
  auto items = FlatJson::split_array(j.raw("faults"), where + ": faults");
  if (!items.ok()) return items.error();
  for (std::string const& item : *items) {
    auto text = FlatJson::unquote(item, where + ": faults");
    if (!text.ok()) return text.error();
    FaultKind kind = FaultKind::kNone;
    if (!text->empty()) {
      auto parsed = parse_fault_kind(*text);
      if (!parsed.ok()) return parsed.error();
      kind = *parsed;
    }
    r.faults.push_back(kind);
  }
  return core::Status::Ok();
}

}  // namespace

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
  MOETUNE_RETURN_IF_ERROR(decode_faults(*j, where, r));
  if (j->has("warmup")) r.warmup = static_cast<int>(*j->number("warmup"));
  if (j->has("reps")) r.reps = static_cast<int>(*j->number("reps"));
  if (j->has("background")) {
    auto b = j->boolean("background");
    if (!b.ok()) return b.error();
    r.background = *b;
  }
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
  if (!r.configs.empty() || !r.gemm_spaces.empty()) {
    add(out, "default_config", core::to_json_text(r.default_config, -1));
    add(out, "configs", configs_text(r.configs));
    add(out, "gemm_spaces", gemm_spaces_text(r.gemm_spaces));
  }
  if (!r.reasons.empty()) {
    std::string reasons = "[";
    for (size_t i = 0; i < r.reasons.size(); ++i)
      reasons += (i ? ", " : "") + json_string(r.reasons[i]);
    add(out, "reasons", reasons + "]");
  }
  if (!r.outcomes.empty()) {
    std::string outcomes = "[";
    for (size_t i = 0; i < r.outcomes.size(); ++i)
      outcomes += (i ? ", " : "") + json_string(to_string(r.outcomes[i]));
    add(out, "outcomes", outcomes + "]");
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

namespace {

/// `v` into `out`, or its error: a missing or mistyped field of a worker's answer is an error of
/// the answer, never an exception in the parent.
template <class T, class U>
core::Status take(core::Result<T> v, U& out) {
  if (!v.ok()) return v.error();
  out = static_cast<U>(*v);
  return core::Status::Ok();
}

/// hello: the worker's protocol version, backend, family and device.
core::Status decode_hello(FlatJson const& j, std::string const& where, Response& r) {
  MOETUNE_RETURN_IF_ERROR(take(j.number("protocol_version"), r.protocol_version));
  MOETUNE_RETURN_IF_ERROR(take(j.string("backend"), r.backend));
  MOETUNE_RETURN_IF_ERROR(take(j.string("family"), r.family));
  MOETUNE_RETURN_IF_ERROR(take(j.number("family_version"), r.family_version));
  if (!j.has("device")) {
    return core::make_error(core::ErrorCode::kParse, where, "a hello answer needs device");
  }
  return take(core::parse_device_info_json(j.raw("device"), where + ": device"), r.device);
}

/// space: the default config, the joint space and the per-GEMM spaces.
core::Status decode_space(FlatJson const& j, std::string const& where, Response& r) {
  MOETUNE_RETURN_IF_ERROR(
      take(core::parse_moe_config_json(j.raw("default_config"), where + ": default_config"),
           r.default_config));
  if (!j.has("configs") || !j.has("gemm_spaces")) {
    return core::make_error(core::ErrorCode::kParse, where,
                            "a space answer needs configs and gemm_spaces");
  }
  MOETUNE_RETURN_IF_ERROR(take(parse_configs(j.raw("configs"), where), r.configs));
  return take(parse_gemm_spaces(j.raw("gemm_spaces"), where), r.gemm_spaces);
}

/// feasible / precompile: one reason (empty: feasible) or outcome per config.
core::Status decode_lists(FlatJson const& j, std::string const& where, Response& r) {
  if (j.has("reasons")) {
    auto items = FlatJson::split_array(j.raw("reasons"), where + ": reasons");
    if (!items.ok()) return items.error();
    for (std::string const& item : *items) {
      auto s = FlatJson::unquote(item, where + ": reasons");
      if (!s.ok()) return s.error();
      r.reasons.push_back(*s);
    }
  }
  if (j.has("outcomes")) {
    auto items = FlatJson::split_array(j.raw("outcomes"), where + ": outcomes");
    if (!items.ok()) return items.error();
    for (std::string const& item : *items) {
      auto text = FlatJson::unquote(item, where + ": outcomes");
      if (!text.ok()) return text.error();
      auto o = parse_outcome(*text);
      if (!o.ok()) return o.error();
      r.outcomes.push_back(*o);
    }
  }
  return core::Status::Ok();
}

/// check: the gate's inputs (a check without its digest is not read as one: has_check stays
/// false and the gate refuses it).
core::Status decode_check(FlatJson const& j, Response& r) {
  MOETUNE_RETURN_IF_ERROR(take(j.string("digest"), r.check.digest));
  MOETUNE_RETURN_IF_ERROR(take(j.number("rel_l2_error"), r.check.rel_l2_error));
  MOETUNE_RETURN_IF_ERROR(take(j.boolean("all_finite"), r.check.all_finite));
  MOETUNE_RETURN_IF_ERROR(take(j.boolean("all_written"), r.check.all_written));
  MOETUNE_RETURN_IF_ERROR(take(j.number("first_bad"), r.check.first_bad));
  r.has_check = true;
  return core::Status::Ok();
}

}  // namespace

core::Result<Response> decode_response(std::string_view line, std::string const& where) {
  auto j = FlatJson::parse(line, where);
  if (!j.ok()) return j.error();
  Response r;
  MOETUNE_RETURN_IF_ERROR(take(j->boolean("ok"), r.ok));
  if (!r.ok) {
    std::string outcome;
    MOETUNE_RETURN_IF_ERROR(take(j->string("outcome"), outcome));
    MOETUNE_RETURN_IF_ERROR(take(parse_outcome(outcome), r.outcome));
    MOETUNE_RETURN_IF_ERROR(take(j->string("message"), r.message));
    return r;
  }
  if (j->has("backend")) MOETUNE_RETURN_IF_ERROR(decode_hello(*j, where, r));
  if (j->has("default_config")) MOETUNE_RETURN_IF_ERROR(decode_space(*j, where, r));
  MOETUNE_RETURN_IF_ERROR(decode_lists(*j, where, r));
  if (j->has("digest")) MOETUNE_RETURN_IF_ERROR(decode_check(*j, r));
  if (j->has("samples_us")) {
    MOETUNE_RETURN_IF_ERROR(
        take(parse_doubles(j->raw("samples_us"), where + ": samples_us"), r.samples_us));
  }
  return r;
}

}  // namespace moetune::tuner
