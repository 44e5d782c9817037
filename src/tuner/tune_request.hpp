// TuneRequest: everything a tune run was asked, resolved from `moetune tune`'s flags (checked by
// the CLI): the recipe, the buckets, where tables and measurements go, and the search's options.
// The tune pipeline (tuner/tune_plan.hpp, tuner/tune_pipeline.hpp) reads only this.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tuner/outcome.hpp"

namespace moetune::tuner {

struct TuneRequest {
  std::string recipe_path;
  std::vector<int64_t> buckets;  ///< ascending, distinct; empty = each shape's own
  std::string backend;           ///< --backend; empty = the shape's
  std::string out_dir;           ///< empty = tables/<device>
  std::string store;             ///< SQLite store path; empty = in memory (no resume)
  bool merge = false;            ///< keep the table's other rows; its current row is the incumbent
  bool retarget_device = false;  ///< tune a recipe of another device for this one
  bool measure_pinned = false;   ///< also tune pinned buckets (report only; the pin still wins)
  bool exhaustive = false;       ///< no halving: the reference sweep the tuner is compared with
  int stage2_gemm1s = 1;         ///< GEMM1 configs stage 2 runs under (SearchOptions)
  bool paired_passes = true;     ///< final rounds: a win needs the paired test over passes too
  int reps = 15;                 ///< final-round reps
  int warmup = 1;                ///< untimed runs before each timing
  int repeat = 0;                ///< re-runs of the final round (winner agreement)
  double margin = 0.01;          ///< fraction a challenger must win by
  double timeout_s = 10;         ///< per-candidate timeout, seconds
  double budget_min = 0;         ///< the run's time budget in minutes; 0 = none
  FaultPlan faults;              ///< TEST ONLY: injected candidate failures
  std::string command_line;      ///< the command as given, for the run's provenance
  std::vector<std::string> env_var_names;  ///< MOETUNE_* variables that are not levers
  /// When the run began: the budget and the reported elapsed time count from it.
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

}  // namespace moetune::tuner
