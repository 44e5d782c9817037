// The worker protocol: one JSON object per line over pipes, parent -> worker requests and one
// response line per request. Nested values (problem, routing, configs, device) use core's JSON
// text; this file only frames them, with a small scanner for the flat top-level object (STYLE 3:
// no JSON library outside core/json_io).
//
//   {"op":"hello"}                                  -> backend, family, family_version, device
//   {"op":"space","problem":P}                      -> default_config, configs (the joint search
//                                                      space), gemm_spaces (per block_m: block_m,
//                                                      base, gemm1 [K..], gemm2 [K..])
//   {"op":"feasible","problem":P,"configs":[C..]}   -> reasons ("" = can_implement ok)
//   {"op":"prepare","problem":P,"routing":R,"seed":N}
//   {"op":"precompile","configs":[C..],"faults":[".."]} -> reasons, outcomes (per config)
//   {"op":"precompile",...,"background":true}       -> every config ok at once: the worker compiles
//                                                      them while it answers the checks (a check
//                                                      waits for its own config; any other request
//                                                      stops the rest), a failure surfaces at the
//                                                      config's check (background_compile.hpp)
//   {"op":"check","config":C,"fault":"crash"}       -> rel_l2_error, all_finite, ..., digest
//   {"op":"time","config":C,"warmup":1,"reps":5,"fault":""} -> samples_us
//   {"op":"quit"}
// A failed request answers {"ok":false,"outcome":"launch_failed","message":"..."}.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.hpp"
#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/flat_json.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "core/routing.hpp"
#include "kernels/testbed.hpp"
#include "tuner/outcome.hpp"

namespace moetune::tuner {

using core::FlatJson;
using core::json_double;
using core::json_doubles;
using core::json_string;
using core::parse_doubles;

/// Bumped when a message changes; hello answers it and the parent refuses a mismatch.
inline constexpr int kProtocolVersion = 3;

struct Request {
  std::string op{};  ///< hello | space | feasible | prepare | precompile | check | time | quit
  core::MoeProblem problem{};
  core::RoutingProfile routing{};
  uint64_t seed = 0;
  core::MoeConfig config{};
  std::vector<core::MoeConfig> configs{};
  int warmup = 0;
  int reps = 1;
  FaultKind fault = FaultKind::kNone;
  std::vector<FaultKind> faults{};  ///< precompile: one per config (only kCompile acts there)
  bool background = false;          ///< precompile: answer at once, compile while answering checks
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
  std::vector<core::GemmSpace> gemm_spaces;  ///< empty: the family is tuned jointly on configs
  std::vector<std::string> reasons;
  std::vector<Outcome> outcomes;  ///< precompile: per config, with its reason when not ok
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
