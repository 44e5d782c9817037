// moetune tune: the flags of a tune run, turned into a tuner::TuneRequest for the tune pipeline
// (tuner/tune_plan.hpp plans each shape, tuner/tune_pipeline.hpp tunes its buckets, records every
// measurement in the store and writes each shape's table), and what the run prints: one line per
// bucket, the table, the --json object and the progress bar (tune_report.hpp). A recipe of
// another device is refused unless --retarget-device (tables are named for the device measured).
// Pinned rows win over tuned ones; --merge keeps the table's other rows. Exit 1 when every
// candidate of a bucket failed (the run stops there with a summary; rows tuned so far are
// written), 2 on bad input, before any kernel runs.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "cli/tune_report.hpp"
#include "tuner/outcome.hpp"
#include "tuner/search.hpp"
#include "tuner/tune_pipeline.hpp"
#include "tuner/tune_plan.hpp"
#include "tuner/tune_request.hpp"

namespace moetune::cli {
namespace {

using Clock = std::chrono::steady_clock;

/// The flags: the request's fields bound directly, and the three that are text on the command
/// line (buckets, the fault plan) or only the CLI's (--json).
struct TuneArgs {
  tuner::TuneRequest req;  ///< faults set by check_args; buckets, command line, start: make_request
  std::string buckets;     ///< "1,4,16"; empty = the recipe's
  bool json = false;
  std::string inject_fault;
};

std::vector<int64_t> parse_buckets(std::string const& list) {
  std::vector<int64_t> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > core::kMaxTokens) {
      throw CliExit{kExitBadInput, "--buckets '" + list + "': '" + item +
                                       "' is not a token count in [1, " +
                                       std::to_string(core::kMaxTokens) + "]; write e.g. 1,4,16"};
    }
    out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void check_args(TuneArgs& args) {
  auto bad = [](std::string m) { throw CliExit{kExitBadInput, std::move(m)}; };
  if (args.req.reps < 1 || args.req.warmup < 0) {
    bad("--reps must be >= 1 and --warmup >= 0; seen --reps " + std::to_string(args.req.reps) +
        " --warmup " + std::to_string(args.req.warmup));
  }
  if (args.req.repeat < 0)
    bad("--repeat " + std::to_string(args.req.repeat) + " is negative; use 0..10");
  if (args.req.stage2_gemm1s < 1 || args.req.stage2_gemm1s > tuner::kMaxStage2Gemm1s) {
    bad("--stage2-gemm1s " + std::to_string(args.req.stage2_gemm1s) + " is out of range; use 1.." +
        std::to_string(tuner::kMaxStage2Gemm1s));
  }
  if (!(args.req.timeout_s > 0 && args.req.timeout_s <= 86400)) {
    bad("--timeout-s must be > 0 seconds (at most a day); e.g. --timeout-s 10");
  }
  if (!(args.req.margin >= 0 && args.req.margin < 1))
    bad("--margin must be in [0, 1); e.g. 0.01 = 1%");
  if (!(args.req.budget_min >= 0 && std::isfinite(args.req.budget_min))) {
    bad("--budget-min must be >= 0 minutes (0 = no budget)");
  }
  if (!args.inject_fault.empty()) {
    auto plan = tuner::parse_fault_plan(args.inject_fault);
    if (!plan.ok()) bad(plan.error().to_string());
    args.req.faults = *plan;
  }
  if (!args.buckets.empty()) parse_buckets(args.buckets);  // bad input fails before any run
  if (!args.req.backend.empty()) check_backend_name(args.req.backend, "--backend");
}

/// The command line as given (from /proc/self/cmdline), for the run's provenance in the store.
std::string own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& c : text) c = c == '\0' ? ' ' : c;
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

/// The request the checked flags make; the run starts now.
tuner::TuneRequest make_request(TuneArgs const& args) {
  tuner::TuneRequest request = args.req;
  if (!args.buckets.empty()) request.buckets = parse_buckets(args.buckets);
  request.command_line = own_command_line();
  request.env_var_names = env_var_names();
  request.started = Clock::now();
  return request;
}

/// What a run prints: human lines on stdout (or, with --json, one object at the end), failures
/// and the progress bar on stderr.
class TunePrinter final : public tuner::TuneObserver {
 public:
  explicit TunePrinter(bool json) : json_mode_(json), json_(json) {}

  void run_started(int buckets_total) override {
    progress_.emplace(buckets_total, ::isatty(2) == 1);
  }

  void shape_started(tuner::ShapePlan const& plan) override {
    core::RecipeShape const& shape = *plan.shape;
    if (!json_mode_) {
      std::cout << "tuning " << shape.name << " on " << plan.backend_name << " ("
                << plan.device.name << "): " << core::to_string(shape.problem) << std::endl;
      if (!plan.retargeted_from.empty()) {
        std::cout << "retargeted from " << plan.retargeted_from << " to " << plan.device_label
                  << " (--retarget-device): the table is named for " << plan.device_label
                  << "; the recipe's pinned buckets are tuned here" << std::endl;
      }
    }
    json_.begin_shape(shape.name, plan.path, plan.backend_name);
  }

  void pinned_bucket(int64_t bucket, core::PinnedRow const& pin, bool measured) override {
    if (!json_mode_) {
      std::cout << "bucket " << bucket << ": pinned " << core::short_string(pin.config) << " ("
                << pin.source.kind << " " << pin.source.date << ")"
                << (measured ? "; tuned with the pin as incumbent, for comparison:" : ", not tuned")
                << std::endl;
    }
    if (!measured) json_.pinned_bucket(bucket, pin.config);
  }

  void progress(int64_t bucket, int index, double fraction) override {
    progress_->update(bucket, index, fraction);
  }

  void bucket_failed(tuner::ShapePlan const& plan, int64_t bucket,
                     tuner::BucketResult const& r) override {
    progress_->done();
    std::cerr << "moetune tune: " << plan.where << ": bucket " << bucket
              << ": every candidate failed (" << r.summary << ")"
              << (r.aborted ? ", none passed within --timeout-s + 3 s" : "")
              << "; stopping the run (rows tuned so far are written)\n";
    json_.failed_bucket(r);
  }

  void bucket_tuned(int64_t bucket, tuner::BucketResult const& r, std::string const& command,
                    core::PinnedRow const* pin) override {
    if (!json_mode_) {
      progress_->done();
      std::cout << (pin != nullptr ? "  " : "") << bucket_line(r) << "\n";
      if (std::string p = pruned_line(r); !p.empty()) std::cout << p << "\n";
      std::cout << std::flush;
    }
    if (pin != nullptr) {
      json_.pinned_bucket(bucket, pin->config, &r);
    } else {
      json_.tuned_bucket(r, command);
    }
  }

  void shape_written(tuner::ShapePlan const& plan, std::string const& written) override {
    json_.end_shape();
    if (!json_mode_) std::cout << "\n" << format_table_text(plan.table, written);
  }

  /// The end of the run: clears the progress bar, prints the --json object.
  void finish(tuner::TuneOutcome const& outcome, Clock::time_point started) {
    progress_->done();
    json_.finish(std::cout, outcome.store_path, outcome.run,
                 std::chrono::duration<double>(Clock::now() - started).count());
  }

 private:
  bool json_mode_;
  TuneJson json_;
  std::optional<ProgressBar> progress_;  ///< from run_started on
};

int run_tune(TuneArgs& args) {
  check_args(args);
  tuner::TuneRequest const request = make_request(args);
  core::Recipe recipe = load_recipe_or_exit(args.req.recipe_path);  // planning may retarget it
  tuner::WorkerPool pool;
  std::vector<tuner::ShapePlan> plans = unwrap(tuner::plan_shapes(request, recipe, pool));
  TunePrinter printer(args.json);
  tuner::TuneOutcome const outcome = unwrap(tuner::tune_recipe(request, plans, printer));
  printer.finish(outcome, request.started);
  return outcome.all_ok ? kExitOk : kExitFindings;
}

}  // namespace

namespace {

/// tune's search and timing options (setup_tune).
void add_search_options(CLI::App& app, TuneArgs& args) {
  app.add_flag("--exhaustive", args.req.exhaustive,
               "no successive halving: every candidate of the per-GEMM search timed with --reps, "
               "stage 2 at each group's 3 best GEMM1 configs; slow, the reference a tune is "
               "checked against");
  app.add_option("--stage2-gemm1s", args.req.stage2_gemm1s,
                 "stage 2 searches GEMM2 under stage 1's fastest GEMM1 and, above 1, under its "
                 "nearest near-tied GEMM1s too (up to N in all): a GEMM2's time depends on the "
                 "GEMM1 it runs after")
      ->capture_default_str();
  app.add_flag("--paired-passes,!--no-paired-passes", args.req.paired_passes,
               "final round: a challenger wins only when it also wins a paired t-test over the "
               "passes (each pass's median ratio), not by the pooled intervals alone (the "
               "default; --no-paired-passes: the intervals alone decide)");
  app.add_option("--reps", args.req.reps, "timed runs per finalist in the final round")
      ->capture_default_str();
  app.add_option("--warmup", args.req.warmup, "untimed runs before each timing")
      ->capture_default_str();
  app.add_option("--repeat", args.req.repeat,
                 "re-run the final round N times and report winner agreement per bucket")
      ->capture_default_str();
  app.add_option("--margin", args.req.margin,
                 "a challenger's CI upper bound must sit this fraction below the incumbent's CI "
                 "lower bound to replace it, else the incumbent stays; a tie only where the "
                 "interval of their time ratio lies within this fraction of 1 on both sides")
      ->capture_default_str();
  app.add_option("--timeout-s", args.req.timeout_s,
                 "per-candidate timeout (one check or one timing); the worker is killed and "
                 "restarted after it")
      ->capture_default_str();
  app.add_option("--budget-min", args.req.budget_min,
                 "time budget in minutes for the whole run (0 = none): past a bucket's share "
                 "(an even share of the budget left, three for the first bucket), new candidates "
                 "are not run and halving jumps to the final round")
      ->capture_default_str();
  app.add_option("--inject-fault", args.inject_fault,
                 "TEST ONLY: KIND@N[,KIND@N...] makes candidate N (creation order; or 'all') fail: "
                 "compile, launch, crash, wrong, nan, hang or oom");
}

}  // namespace

void setup_tune(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<TuneArgs>();
  app.add_option("--recipe", args->req.recipe_path, "the recipe (JSON)")->required();
  app.add_option("--buckets", args->buckets,
                 "token counts to tune, e.g. 1,4,16 (default: the recipe's buckets)");
  add_backend_option(app, &args->req.backend);
  app.add_option("--out", args->req.out_dir,
                 "directory the tables go to (default: tables/<device>)");
  app.add_option("--store", args->req.store,
                 "SQLite store of every measurement (default: in memory, no resume); a killed run "
                 "given the same store resumes where it stopped");
  app.add_flag("--merge", args->req.merge,
               "keep rows of the existing table that this run does not tune (and let each "
               "tuned bucket's current row defend its place as the incumbent)");
  app.add_flag("--json", args->json, "print the per-bucket results as one JSON object");
  app.add_flag("--retarget-device", args->req.retarget_device,
               "tune a recipe made for another device (its \"device\") on this one: the tables "
               "are named for this device, each tuned row's source says it was retargeted, and "
               "the recipe's pinned buckets are tuned too. Without it such a recipe is refused "
               "(exit 2); MOETUNE_DEVICE_NAME sets the device name for tests");
  app.add_flag("--measure-pinned", args->req.measure_pinned,
               "tune pinned buckets too, the pin as incumbent, and print the result next to the "
               "pin (the pin still wins)");
  add_search_options(app, *args);
  app.callback([args, &exit_code] { exit_code = run_tune(*args); });
}

}  // namespace moetune::cli
