// moetune tune: tune a recipe's buckets through a worker process per backend (tuner/search.hpp),
// record every measurement in the store, and write the winners into each shape's table with their
// measurement and the command that reproduces them. A recipe of another device is refused unless
// --retarget-device (tables are named for the device measured). Pinned rows win over tuned ones;
// --merge keeps the table's other rows. Exit 1 when every candidate of a bucket failed (the run
// stops there with a summary; rows tuned so far are written), 2 on bad input, before any kernel
// runs. (Past the 400-line rule of thumb by the help text of its twelve options; the report lives
// in tune_report.cpp, the search in tuner/.)
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "cli/tune_report.hpp"
#include "core/atomic_file.hpp"
#include "core/build_info.hpp"
#include "core/device_info.hpp"
#include "core/device_label.hpp"
#include "core/engine_rows.hpp"
#include "core/json_text.hpp"
#include "kernels/cpu/moe_data.hpp"
#include "runtime/device_env.hpp"
#include "tuner/search.hpp"
#include "tuner/store.hpp"
#include "tuner/worker.hpp"

namespace moetune::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct TuneArgs {
  std::string recipe_path;
  std::string buckets;  ///< "1,4,16"; empty = the recipe's
  std::string backend;  ///< empty = the shape's backend
  std::string out_dir;  ///< empty = tables/<device>
  std::string store;    ///< empty = in memory (no resume)
  bool merge = false;
  bool json = false;
  bool retarget_device = false;  ///< tune a recipe of another device for this one
  bool measure_pinned = false;   ///< also tune pinned buckets (report only; the pin still wins)
  bool exhaustive = false;       ///< no halving: the reference sweep the tuner is compared with
  int stage2_gemm1s = 1;         ///< GEMM1 configs stage 2 runs under (SearchOptions)
  bool paired_passes = true;     ///< final rounds: a win needs the paired test over passes too
  int reps = 15;                 ///< final-round reps
  int warmup = 1;
  int repeat = 0;
  double margin = 0.01;
  double timeout_s = 10;
  double budget_min = 0;  ///< 0 = no budget
  std::string inject_fault;
  tuner::FaultPlan faults;
  std::string command_line;
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

/// The backend a shape is tuned on: --backend / $MOETUNE_BACKEND when given, else the shape's.
/// A table's family is fixed by its recipe, so a mismatch is an error, not a silent switch.
std::string pick_backend(TuneArgs const& args, core::RecipeShape const& shape,
                         std::string const& where) {
  std::string chosen = args.backend;
  std::string origin = "--backend";
  if (chosen.empty() && std::getenv("MOETUNE_BACKEND") != nullptr) {
    chosen = default_backend();
    origin = "MOETUNE_BACKEND";
  }
  std::string const wanted = shape.backend.empty() ? default_backend() : shape.backend;
  if (!chosen.empty() && chosen != wanted) {
    throw CliExit{kExitBadInput, where + ": the shape is tuned on backend '" + wanted +
                                     "' (family " + shape.family + ") but " + origin + " is '" +
                                     chosen + "'; drop " + origin + " or use a recipe for " +
                                     chosen};
  }
  check_backend_name(wanted, where + ": backend");
  (void)fast_paths_from_env_or_exit(wanted);  // a bad MOETUNE_* variable fails before any run
  return wanted;
}

std::string reproduce_command(TuneArgs const& args, std::string const& backend, int64_t bucket,
                              std::string const& out_dir, bool retargeted) {
  std::ostringstream out;
  out << "moetune tune --recipe " << args.recipe_path << " --buckets " << bucket << " --backend "
      << backend << " --out " << out_dir << " --merge --reps " << args.reps << " --warmup "
      << args.warmup << " --margin " << args.margin << " --timeout-s " << args.timeout_s;
  if (args.exhaustive) out << " --exhaustive";
  if (args.stage2_gemm1s != 1) out << " --stage2-gemm1s " << args.stage2_gemm1s;
  if (!args.paired_passes) out << " --no-paired-passes";
  if (retargeted) out << " --retarget-device";
  return out.str();
}

/// Everything a shape needs before any kernel runs; building it checks all bad input (backend,
/// out dir, an existing table under --merge) so a failure changes no file.
struct ShapePlan {
  core::RecipeShape const* shape = nullptr;
  std::string where;
  std::string backend_name;
  std::string out_dir;
  tuner::WorkerClient* worker = nullptr;
  core::DeviceInfo device;
  std::string device_label;     ///< this device as table names spell it; names the table
  std::string retargeted_from;  ///< the recipe's device under --retarget-device, else ""
  core::Table table;
  std::string path;
  std::vector<int64_t> buckets;
  std::string tune_hash;
};

/// One worker per backend, started on first use; its hello says whether the backend works here.
tuner::WorkerClient& worker_for(std::map<std::string, std::unique_ptr<tuner::WorkerClient>>& pool,
                                std::string const& backend, std::string const& where,
                                core::DeviceInfo* device) {
  auto& slot = pool[backend];
  if (!slot) slot = std::make_unique<tuner::WorkerClient>(tuner::WorkerOptions{.backend = backend});
  auto hello = slot->hello();
  if (!hello.ok()) {
    throw CliExit{kExitBadInput, where + ": the recipe's backend is " + backend +
                                     ", which is unavailable here (" + hello.error().to_string() +
                                     "); run on a machine with a GPU, or tune a " +
                                     "recipe whose backend is cpu (e.g. recipes/demo.json)"};
  }
  *device = hello->device;
  return *slot;
}

std::string tune_hash(TuneArgs const& args, core::RecipeShape const& shape,
                      std::string const& backend) {
  // Everything that changes a measurement; the store reads back only what matches it.
  return tuner::hash_text(
      core::to_json_text(shape.problem, -1) + "|" + core::format_routing(shape.routing) + "|" +
      backend + "|" + shape.family + "|" + std::to_string(shape.family_version) + "|w" +
      std::to_string(args.warmup) + "|r" + std::to_string(args.reps) +
      (args.exhaustive ? "|exhaustive" : "") +
      (args.stage2_gemm1s != 1 ? "|stage2-gemm1s" + std::to_string(args.stage2_gemm1s) : "") +
      (args.paired_passes ? "|paired-passes" : "") + "|protocol" +
      std::to_string(tuner::kProtocolVersion) + "|search" + std::to_string(tuner::kSearchVersion));
}

/// A table is named for the device it was measured on: a recipe of another device is refused
/// (exit 2, both names) unless --retarget-device, which names the table for this device and
/// tunes the recipe's pinned buckets too (the pins were measured on the recipe's device).
void check_device(TuneArgs const& args, core::RecipeShape& shape, ShapePlan& plan) {
  plan.device_label = unwrap(runtime::local_device_label(plan.device));
  std::string const wanted = core::device_label(shape.device);
  if (wanted == plan.device_label) return;
  if (!args.retarget_device) {
    throw CliExit{kExitBadInput,
                  plan.where + ": the recipe's device is " + wanted + " but this device is " +
                      plan.device_label + " (" + plan.device.name +
                      "); a table is named for the device it was measured on: "
                      "tune on " +
                      wanted + ", or pass --retarget-device to tune the recipe for " +
                      plan.device_label + " (tables named device_name=" + plan.device_label + ")"};
  }
  plan.retargeted_from = wanted;
  shape.pinned_rows.clear();
}

ShapePlan plan_shape(TuneArgs const& args, core::Recipe& recipe, size_t index,
                     std::map<std::string, std::unique_ptr<tuner::WorkerClient>>& pool) {
  ShapePlan plan;
  plan.shape = &recipe.shapes[index];
  core::RecipeShape const& shape = *plan.shape;
  plan.where = args.recipe_path + ": shapes[" + std::to_string(index) + "] (" + shape.name + ")";
  plan.backend_name = pick_backend(args, shape, plan.where);
  if (!args.out_dir.empty()) unwrap(core::ensure_writable_dir(args.out_dir));
  plan.worker = &worker_for(pool, plan.backend_name, plan.where, &plan.device);
  check_device(args, recipe.shapes[index], plan);
  plan.out_dir = !args.out_dir.empty()          ? args.out_dir
                 : plan.retargeted_from.empty() ? "tables/" + core::vllm_device_name(shape.device)
                                                : "tables/" + plan.device_label;
  unwrap(core::ensure_writable_dir(plan.out_dir));

  core::TableKey key = core::table_key_for(shape, plan.device.toolchain);
  if (!plan.retargeted_from.empty()) key.device_name = plan.device_label;
  plan.path = plan.out_dir + "/" + core::table_file_name(key);
  if (args.merge) {
    auto existing = core::load_table(plan.path);
    if (existing.ok()) {
      plan.table = std::move(existing).value();
    } else if (existing.error().code != core::ErrorCode::kNotFound) {
      fail(existing.error());
    }
  }
  plan.table.key = key;
  plan.table.policy = shape.policy;
  plan.table.has_manifest = true;
  plan.buckets = args.buckets.empty() ? shape.buckets : parse_buckets(args.buckets);
  if (!plan.buckets.empty()) {
    // The worker generates each bucket's inputs on the host: refuse a size this machine cannot
    // hold here, as bad input, before the worker dies of it.
    core::MoeProblem largest = shape.problem;
    largest.num_tokens = plan.buckets.back();
    unwrap(core::check_host_bytes(kernels::cpu::host_bytes_estimate(largest), plan.where,
                                  "bucket M=" + std::to_string(largest.num_tokens),
                                  "tune smaller buckets (--buckets)"));
  }
  plan.tune_hash = tune_hash(args, shape, plan.backend_name);
  return plan;
}

struct RunContext {
  tuner::Store* store = nullptr;
  int64_t run = 0;
  ProgressBar* progress = nullptr;
  int bucket_index = 0;  ///< buckets started so far over all shapes
  int buckets_total = 0;
  Clock::time_point deadline = Clock::time_point::max();
};

tuner::SearchOptions search_options(TuneArgs const& args, RunContext const& ctx) {
  tuner::SearchOptions o;
  o.timeout_s = args.timeout_s;
  o.margin = args.margin;
  o.warmup = args.warmup;
  o.final_reps = args.reps;
  o.first_reps = std::min(3, args.reps);
  o.repeat = args.repeat;
  o.exhaustive = args.exhaustive;
  o.stage2_gemm1s = args.stage2_gemm1s;
  o.paired_passes = args.paired_passes;
  o.faults = args.faults;
  // An even share of the budget left (three for the run's first bucket, compiling cold).
  o.deadline = tuner::bucket_deadline(
      Clock::now(), ctx.deadline, ctx.buckets_total - ctx.bucket_index + 1, ctx.bucket_index == 1);
  return o;
}

/// Tunes one bucket; prints its line. Returns the result (ok = a winner exists).
tuner::BucketResult tune_one(TuneArgs const& args, ShapePlan const& plan, RunContext& ctx,
                             int64_t bucket, std::optional<core::MoeConfig> incumbent,
                             std::vector<core::MoeConfig> seeds) {
  ++ctx.bucket_index;
  tuner::BucketTask task;
  task.problem = plan.shape->problem;
  task.problem.num_tokens = bucket;
  task.routing = plan.shape->routing;
  task.seed = plan.shape->routing.seed;
  task.bucket = bucket;
  task.incumbent = std::move(incumbent);
  task.seeds = std::move(seeds);
  task.run = ctx.run;
  task.tune_hash = plan.tune_hash;
  task.shape = core::table_file_name(plan.table.key);
  task.device = plan.device.name;
  int const index = ctx.bucket_index;
  auto progress = [&](double f) { ctx.progress->update(bucket, index, f); };
  tuner::BucketResult r = unwrap(
      tuner::tune_bucket(*plan.worker, *ctx.store, task, search_options(args, ctx), progress));
  if (r.ok) {
    (void)ctx.store->record_decision(
        tuner::Decision{.run = ctx.run,
                        .tune_hash = plan.tune_hash,
                        .shape = task.shape,
                        .bucket = bucket,
                        .winner = r.winner,
                        .incumbent = r.incumbent,
                        .challenger = r.challenger,
                        .verdict = r.verdict,
                        .winner_us = r.winner_stats.median_us,
                        .incumbent_us = r.incumbent_stats.median_us,
                        .challenger_us = r.challenger_stats.median_us,
                        .agreement = r.repeats > 0 ? double(r.agreeing) / r.repeats : 1.0,
                        .tied = r.tied});
  }
  return r;
}

/// The row a tuned bucket writes, with its provenance and the command that reproduces it.
core::TableRow tuned_row(TuneArgs const& args, ShapePlan const& plan, tuner::BucketResult const& r,
                         std::string const& command) {
  core::TableRow row{.config = r.winner,
                     .source = tuned_source(r, TunedSourceInfo{.device = plan.device.name,
                                                               .reps = args.reps,
                                                               .warmup = args.warmup,
                                                               .margin = args.margin,
                                                               .exhaustive = args.exhaustive,
                                                               .paired_passes = args.paired_passes,
                                                               .routing = plan.shape->routing,
                                                               .command = command})};
  if (!plan.retargeted_from.empty()) {
    row.source->protocol += "; retargeted (--retarget-device): the recipe's device is " +
                            plan.retargeted_from + ", measured on " + plan.device_label;
  }
  return row;
}

/// One bucket of a shape: a pinned row is only reported (or, with --measure-pinned, tuned as the
/// incumbent and reported); else tuned with the current row (--merge) as the incumbent and its
/// winner written to plan.table. False when every candidate failed (the run stops).
bool tune_shape_bucket(TuneArgs const& args, ShapePlan& plan, RunContext& ctx, TuneJson& json,
                       int64_t bucket, std::map<int64_t, core::MoeConfig>& winners) {
  core::RecipeShape const& shape = *plan.shape;
  auto pin = shape.pinned_rows.find(bucket);
  bool const pinned = pin != shape.pinned_rows.end();
  if (pinned && !args.json) {
    std::cout << "bucket " << bucket << ": pinned " << core::short_string(pin->second.config)
              << " (" << pin->second.source.kind << " " << pin->second.source.date << ")"
              << (args.measure_pinned ? "; tuned with the pin as incumbent, for comparison:"
                                      : ", not tuned")
              << std::endl;
  }
  if (pinned && !args.measure_pinned) {
    json.pinned_bucket(bucket, pin->second.config);
    return true;
  }
  std::optional<core::MoeConfig> incumbent;
  if (pinned) {
    incumbent = pin->second.config;
  } else if (auto row = plan.table.rows.find(bucket); row != plan.table.rows.end()) {
    incumbent = row->second.config;  // --merge: the current row defends its place
  }
  tuner::BucketResult r =
      tune_one(args, plan, ctx, bucket, incumbent, tuner::neighbour_seeds(winners, bucket));
  if (!r.ok) {
    ctx.progress->done();
    std::cerr << "moetune tune: " << plan.where << ": bucket " << bucket
              << ": every candidate failed (" << r.summary << ")"
              << (r.aborted ? ", none passed within --timeout-s + 3 s" : "")
              << "; stopping the run (rows tuned so far are written)\n";
    json.failed_bucket(r);
    return false;
  }
  std::string const command = reproduce_command(args, plan.backend_name, bucket, plan.out_dir,
                                                !plan.retargeted_from.empty());
  if (!args.json) {
    ctx.progress->done();
    std::cout << (pinned ? "  " : "") << bucket_line(r) << "\n";
    if (std::string p = pruned_line(r); !p.empty()) std::cout << p << "\n";
    std::cout << std::flush;
  }
  if (pinned) {
    json.pinned_bucket(bucket, pin->second.config, &r);
    return true;
  }
  winners[bucket] = r.winner;
  json.tuned_bucket(r, command);
  plan.table.rows[bucket] = tuned_row(args, plan, r, command);
  return true;
}

/// Tunes one planned shape and writes its table. Returns false when every candidate of a bucket
/// failed (the run stops there).
bool tune_shape(TuneArgs const& args, ShapePlan& plan, RunContext& ctx, TuneJson& json) {
  core::RecipeShape const& shape = *plan.shape;
  if (!args.json) {
    std::cout << "tuning " << shape.name << " on " << plan.backend_name << " (" << plan.device.name
              << "): " << core::to_string(shape.problem) << std::endl;
    if (!plan.retargeted_from.empty()) {
      std::cout << "retargeted from " << plan.retargeted_from << " to " << plan.device_label
                << " (--retarget-device): the table is named for " << plan.device_label
                << "; the recipe's pinned buckets are tuned here" << std::endl;
    }
  }
  json.begin_shape(shape.name, plan.path, plan.backend_name);
  std::map<int64_t, core::MoeConfig> winners;  // seeds of the neighbouring buckets
  bool all_ok = true;
  for (int64_t bucket : plan.buckets) {
    if (!tune_shape_bucket(args, plan, ctx, json, bucket, winners)) {
      all_ok = false;
      break;
    }
  }
  for (auto const& [bucket, pin] : shape.pinned_rows) {
    plan.table.rows[bucket] = core::TableRow{.config = pin.config, .source = pin.source};
  }
  std::string const written = unwrap(core::save_table(plan.table, plan.out_dir));
  json.end_shape();
  if (!args.json) std::cout << "\n" << format_table_text(plan.table, written);
  return all_ok;
}

void check_args(TuneArgs& args) {
  auto bad = [](std::string m) { throw CliExit{kExitBadInput, std::move(m)}; };
  if (args.reps < 1 || args.warmup < 0) {
    bad("--reps must be >= 1 and --warmup >= 0; seen --reps " + std::to_string(args.reps) +
        " --warmup " + std::to_string(args.warmup));
  }
  if (args.repeat < 0) bad("--repeat " + std::to_string(args.repeat) + " is negative; use 0..10");
  if (args.stage2_gemm1s < 1 || args.stage2_gemm1s > tuner::kMaxStage2Gemm1s) {
    bad("--stage2-gemm1s " + std::to_string(args.stage2_gemm1s) + " is out of range; use 1.." +
        std::to_string(tuner::kMaxStage2Gemm1s));
  }
  if (!(args.timeout_s > 0 && args.timeout_s <= 86400)) {
    bad("--timeout-s must be > 0 seconds (at most a day); e.g. --timeout-s 10");
  }
  if (!(args.margin >= 0 && args.margin < 1)) bad("--margin must be in [0, 1); e.g. 0.01 = 1%");
  if (!(args.budget_min >= 0 && std::isfinite(args.budget_min))) {
    bad("--budget-min must be >= 0 minutes (0 = no budget)");
  }
  if (!args.inject_fault.empty()) {
    auto plan = tuner::parse_fault_plan(args.inject_fault);
    if (!plan.ok()) bad(plan.error().to_string());
    args.faults = *plan;
  }
  if (!args.buckets.empty()) parse_buckets(args.buckets);  // bad input fails before any run
  if (!args.backend.empty()) check_backend_name(args.backend, "--backend");
}

/// The command line as given (from /proc/self/cmdline), for the run's provenance in the store.
std::string own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& c : text) c = c == '\0' ? ' ' : c;
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

int run_tune(TuneArgs& args) {
  check_args(args);
  args.command_line = own_command_line();
  auto const started = Clock::now();
  core::Recipe recipe = load_recipe_or_exit(args.recipe_path);  // check_device may retarget it
  std::map<std::string, std::unique_ptr<tuner::WorkerClient>> pool;
  std::vector<ShapePlan> plans;
  for (size_t i = 0; i < recipe.shapes.size(); ++i) {
    plans.push_back(plan_shape(args, recipe, i, pool));
  }
  auto store = unwrap(tuner::Store::open(args.store.empty() ? ":memory:" : args.store));
  tuner::RunInfo info{.started = tuner::utc_now(),
                      .recipe_path = args.recipe_path,
                      .recipe_hash = tuner::hash_text(unwrap(core::read_file(args.recipe_path))),
                      .commit = core::git_commit(),
                      .device = plans.empty() ? "" : plans[0].device.name,
                      .driver = plans.empty() ? "" : plans[0].device.driver,
                      .toolchain = plans.empty() ? "" : plans[0].device.toolchain,
                      .seed = plans.empty() ? 0 : plans[0].shape->routing.seed,
                      .routing = plans.empty() ? "" : core::format_routing(plans[0].shape->routing),
                      .command = args.command_line};
  RunContext ctx;
  ctx.store = store.get();
  ctx.run = unwrap(store->begin_run(info));
  for (ShapePlan const& plan : plans) {
    for (int64_t b : plan.buckets) {
      ctx.buckets_total += !plan.shape->pinned_rows.count(b) || args.measure_pinned;
    }
  }
  if (args.budget_min > 0) {
    ctx.deadline = started + std::chrono::milliseconds(int64_t(args.budget_min * 60e3));
  }
  ProgressBar progress(ctx.buckets_total, ::isatty(2) == 1);
  ctx.progress = &progress;
  TuneJson json(args.json);
  bool all_ok = true;
  for (ShapePlan& plan : plans) {
    all_ok = tune_shape(args, plan, ctx, json);
    if (!all_ok) break;
  }
  progress.done();
  json.finish(std::cout, store->path(), ctx.run,
              std::chrono::duration<double>(Clock::now() - started).count());
  return all_ok ? kExitOk : kExitFindings;
}

}  // namespace

namespace {

/// tune's search and timing options (setup_tune).
void add_search_options(CLI::App& app, TuneArgs& args) {
  app.add_flag("--exhaustive", args.exhaustive,
               "no successive halving: every candidate of the per-GEMM search timed with --reps, "
               "stage 2 at each group's 3 best GEMM1 configs; slow, the reference a tune is "
               "checked against");
  app.add_option("--stage2-gemm1s", args.stage2_gemm1s,
                 "stage 2 searches GEMM2 under stage 1's fastest GEMM1 and, above 1, under its "
                 "nearest near-tied GEMM1s too (up to N in all): a GEMM2's time depends on the "
                 "GEMM1 it runs after")
      ->capture_default_str();
  app.add_flag("--paired-passes,!--no-paired-passes", args.paired_passes,
               "final round: a challenger wins only when it also wins a paired t-test over the "
               "passes (each pass's median ratio), not by the pooled intervals alone (the "
               "default; --no-paired-passes: the intervals alone decide)");
  app.add_option("--reps", args.reps, "timed runs per finalist in the final round")
      ->capture_default_str();
  app.add_option("--warmup", args.warmup, "untimed runs before each timing")->capture_default_str();
  app.add_option("--repeat", args.repeat,
                 "re-run the final round N times and report winner agreement per bucket")
      ->capture_default_str();
  app.add_option("--margin", args.margin,
                 "a challenger's CI upper bound must sit this fraction below the incumbent's CI "
                 "lower bound to replace it, else the incumbent stays; a tie only where the "
                 "interval of their time ratio lies within this fraction of 1 on both sides")
      ->capture_default_str();
  app.add_option("--timeout-s", args.timeout_s,
                 "per-candidate timeout (one check or one timing); the worker is killed and "
                 "restarted after it")
      ->capture_default_str();
  app.add_option("--budget-min", args.budget_min,
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
  app.add_option("--recipe", args->recipe_path, "the recipe (JSON)")->required();
  app.add_option("--buckets", args->buckets,
                 "token counts to tune, e.g. 1,4,16 (default: the recipe's buckets)");
  add_backend_option(app, &args->backend);
  app.add_option("--out", args->out_dir, "directory the tables go to (default: tables/<device>)");
  app.add_option("--store", args->store,
                 "SQLite store of every measurement (default: in memory, no resume); a killed run "
                 "given the same store resumes where it stopped");
  app.add_flag("--merge", args->merge,
               "keep rows of the existing table that this run does not tune (and let each "
               "tuned bucket's current row defend its place as the incumbent)");
  app.add_flag("--json", args->json, "print the per-bucket results as one JSON object");
  app.add_flag("--retarget-device", args->retarget_device,
               "tune a recipe made for another device (its \"device\") on this one: the tables "
               "are named for this device, each tuned row's source says it was retargeted, and "
               "the recipe's pinned buckets are tuned too. Without it such a recipe is refused "
               "(exit 2); MOETUNE_DEVICE_NAME sets the device name for tests");
  app.add_flag("--measure-pinned", args->measure_pinned,
               "tune pinned buckets too, the pin as incumbent, and print the result next to the "
               "pin (the pin still wins)");
  add_search_options(app, *args);
  app.callback([args, &exit_code] { exit_code = run_tune(*args); });
}

}  // namespace moetune::cli
