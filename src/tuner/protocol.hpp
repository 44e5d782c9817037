// The worker protocol: one JSON object per line over pipes, parent -> worker requests and one
// response line per request. Nested values (problem, routing, configs, device) use core's JSON
// text; this file only frames them, with a small scanner for the flat top-level object (STYLE 3:
// no JSON library outside core/json_io).
//
//   {"op":"hello"}                                  -> backend, family, family_version, device
//   {"op":"space","problem":P}                      -> default_config, configs (the search space)
//   {"op":"feasible","problem":P,"configs":[C..]}   -> reasons ("" = can_implement ok)
//   {"op":"prepare","problem":P,"routing":R,"seed":N}
//   {"op":"check","config":C,"fault":"crash"}       -> rel_l2_error, all_finite, ..., digest
//   {"op":"time","config":C,"warmup":1,"reps":5,"fault":""} -> samples_us
//   {"op":"quit"}
// A failed request answers {"ok":false,"outcome":"launch_failed","message":"..."}.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "core/routing.hpp"
#include "kernels/testbed.hpp"
#include "tuner/flat_json.hpp"
#include "tuner/outcome.hpp"

namespace moetune::tuner {

/// Bumped when a message changes; hello answers it and the parent refuses a mismatch.
inline constexpr int kProtocolVersion = 1;

struct Request {
  std::string op{};  ///< hello | space | feasible | prepare | check | time | quit
  core::MoeProblem problem{};
  core::RoutingProfile routing{};
  uint64_t seed = 0;
  core::MoeConfig config{};
  std::vector<core::MoeConfig> configs{};
  int warmup = 0;
  int reps = 1;
  FaultKind fault = FaultKind::kNone;
};

struct Response {
  bool ok = true;
  Outcome outcome = Outcome::kOk;  ///< the failure class when !ok
  std::string message;             ///< why, when !ok
  // hello
  int protocol_version = kProtocolVersion;
  std::string backend;
  std::string family;
  int family_version = 0;
  core::DeviceInfo device;
  // space / feasible
  core::MoeConfig default_config;
  std::vector<core::MoeConfig> configs;
  std::vector<std::string> reasons;
  // check / time
  bool has_check = false;  ///< `check` holds a check's answer (a gate never reads a default)
  kernels::CheckResult check;
  std::vector<double> samples_us;
};

/// One line, without the trailing newline. Only the fields `op` uses are written.
std::string encode(Request const& r);
std::string encode(Response const& r);
/// Strict inverses of encode; errors name `where`, the field and what was seen.
core::Result<Request> decode_request(std::string_view line, std::string const& where);
core::Result<Response> decode_response(std::string_view line, std::string const& where);

}  // namespace moetune::tuner
