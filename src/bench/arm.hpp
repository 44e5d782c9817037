// A/B arms and the line protocol of `moetune bench --arm-worker`. An arm spec names what differs
// between arms, and nothing else may: inputs, seeds, routing, repeats are the run's.
//   --arm NAME=SPEC, SPEC = ITEM[,ITEM...]
//   ITEM: default                      the backend's default config (no tables, default levers)
//         tables:DIR                   configs through the resolver over the tables in DIR
//         levers:NAME=on|off[+...]     lever knobs (MOETUNE_LEVER_<NAME>) set in the arm's process
//         binary:PATH                  another moetune build runs the arm (same protocol)
//         defines:NAME[=VALUE][+...]   kernel source variants: the arm's process compiles its
//                                      kernels with these -D options (MOETUNE_DEV_NVRTC_DEFINES)
// The worker prints one JSON object per line: a header {"worker": "moetune-bench",
// "worker_version", "commit", "device", "backend"}, then one object per point.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/bench_run.hpp"
#include "core/result.hpp"

namespace moetune::bench {

inline constexpr int kArmWorkerVersion = 1;

struct ArmSpec {
  std::string name;
  std::string spec;     ///< as written
  std::string tables;   ///< "" = default configs
  std::string levers;   ///< "NAME=on,NAME=off" (as --levers takes it), "" = defaults
  std::string binary;   ///< "" = this moetune binary
  std::string defines;  ///< "NAME=V NAME2" (as MOETUNE_DEV_NVRTC_DEFINES takes it), "" = none

  bool operator==(ArmSpec const&) const = default;
};

/// Parses "NAME=SPEC". Errors (kInvalidArgument, where "--arm NAME=SPEC") name the bad item and
/// list the item kinds, with "did you mean".
core::Result<ArmSpec> parse_arm(std::string const& text);

/// One point as a worker reports it.
struct ArmPoint {
  std::string series;
  int64_t m = 0;
  std::string digest;
  bool deterministic = true;
  bool check_ok = true;
  double rel_err = 0;
  std::string config;  ///< short_string
  std::string rule;
  std::string fast_paths;
  std::vector<double> samples_us;
};

/// The worker's header line.
std::string arm_worker_header(std::string const& backend, std::string const& device);
/// A point as one JSON line (no newline).
std::string arm_point_json(BenchPoint const& p);

/// What one worker process reported.
struct ArmReport {
  std::string commit;
  std::string device;
  std::vector<ArmPoint> points;
};
/// Parses a worker's whole stdout. Fails (kParse, where = `where`) on a missing or foreign header,
/// a worker_version this build does not read, or a malformed line (named by number).
core::Result<ArmReport> parse_arm_output(std::string const& text, std::string const& where);

}  // namespace moetune::bench
