// A tuned table row's provenance: its source (the protocol in words, the measurement, the digest)
// and the command that reproduces it.
#pragma once

#include <cstdint>
#include <string>

#include "core/routing.hpp"
#include "core/source.hpp"
#include "core/table.hpp"
#include "tuner/search.hpp"
#include "tuner/tune_plan.hpp"
#include "tuner/tune_request.hpp"

namespace moetune::tuner {

/// What a tuned row's source says besides the result.
struct TunedSourceInfo {
  std::string device;
  int reps = 0;
  int warmup = 0;
  double margin = 0;
  bool exhaustive = false;
  bool paired_passes = true;  ///< SearchOptions::paired_passes
  core::RoutingProfile routing;
  std::string command;  ///< reproduces the row
};

/// The source of a tuned row: kind "tuned", the protocol in words (with the tie's other config),
/// numbers time_us, ci_low_us, ci_high_us, default_us (the incumbent's), challenger_us, tie,
/// candidates, rejected, measured (+ agreement under --repeat), the digest and the command.
core::Source tuned_source(BucketResult const& r, TunedSourceInfo const& info);

/// The `moetune tune` command that re-tunes one bucket of a table into `out_dir` (--merge), with
/// the request's search options.
std::string reproduce_command(TuneRequest const& request, std::string const& backend,
                              int64_t bucket, std::string const& out_dir, bool retargeted);

/// The row a tuned bucket writes, with its provenance and the command that reproduces it; a
/// retargeted plan's row says so in its protocol.
core::TableRow tuned_row(TuneRequest const& request, ShapePlan const& plan, BucketResult const& r,
                         std::string const& command);

}  // namespace moetune::tuner
