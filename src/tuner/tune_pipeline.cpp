// Tuning the planned shapes bucket by bucket and writing their tables; see tune_pipeline.hpp.
#include "tuner/tune_pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

#include "core/atomic_file.hpp"
#include "core/build_info.hpp"
#include "core/engine_rows.hpp"
#include "core/json_text.hpp"
#include "tuner/store.hpp"
#include "tuner/tune_provenance.hpp"

namespace moetune::tuner {
namespace {

using Clock = std::chrono::steady_clock;

struct RunContext {
  Store* store = nullptr;
  int64_t run = 0;
  TuneObserver* observer = nullptr;
  int bucket_index = 0;  ///< buckets started so far over all shapes
  int buckets_total = 0;
  Clock::time_point deadline = Clock::time_point::max();
};

SearchOptions search_options(TuneRequest const& request, RunContext const& ctx) {
  SearchOptions o;
  o.timeout_s = request.timeout_s;
  o.margin = request.margin;
  o.warmup = request.warmup;
  o.final_reps = request.reps;
  o.first_reps = std::min(3, request.reps);
  o.repeat = request.repeat;
  o.exhaustive = request.exhaustive;
  o.stage2_gemm1s = request.stage2_gemm1s;
  o.paired_passes = request.paired_passes;
  o.faults = request.faults;
  // An even share of the budget left (three for the run's first bucket, compiling cold).
  o.deadline = bucket_deadline(Clock::now(), ctx.deadline, ctx.buckets_total - ctx.bucket_index + 1,
                               ctx.bucket_index == 1);
  return o;
}

BucketTask bucket_task(ShapePlan const& plan, RunContext const& ctx, int64_t bucket,
                       std::optional<core::MoeConfig> incumbent,
                       std::vector<core::MoeConfig> seeds) {
  BucketTask task;
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
  return task;
}

void record_decision(RunContext const& ctx, BucketTask const& task, BucketResult const& r) {
  (void)ctx.store->record_decision(
      Decision{.run = ctx.run,
               .tune_hash = task.tune_hash,
               .shape = task.shape,
               .bucket = task.bucket,
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

/// Tunes one bucket and records its decision (ok = a winner exists).
core::Result<BucketResult> tune_one(TuneRequest const& request, ShapePlan const& plan,
                                    RunContext& ctx, int64_t bucket,
                                    std::optional<core::MoeConfig> incumbent,
                                    std::vector<core::MoeConfig> seeds) {
  ++ctx.bucket_index;
  BucketTask const task = bucket_task(plan, ctx, bucket, std::move(incumbent), std::move(seeds));
  int const index = ctx.bucket_index;
  auto progress = [&](double f) { ctx.observer->progress(bucket, index, f); };
  auto r = tune_bucket(*plan.worker, *ctx.store, task, search_options(request, ctx), progress);
  if (r.ok() && r->ok) record_decision(ctx, task, *r);
  return r;
}

/// One bucket of a shape: a pinned row is only reported (or, with --measure-pinned, tuned as the
/// incumbent and reported); else tuned with the current row (--merge) as the incumbent and its
/// winner written to plan.table. False when every candidate failed (the run stops).
core::Result<bool> tune_shape_bucket(TuneRequest const& request, ShapePlan& plan, RunContext& ctx,
                                     int64_t bucket, std::map<int64_t, core::MoeConfig>& winners) {
  auto pin = plan.shape->pinned_rows.find(bucket);
  core::PinnedRow const* pinned = pin != plan.shape->pinned_rows.end() ? &pin->second : nullptr;
  if (pinned != nullptr) {
    ctx.observer->pinned_bucket(bucket, *pinned, request.measure_pinned);
    if (!request.measure_pinned) return true;
  }
  std::optional<core::MoeConfig> incumbent;
  if (pinned != nullptr) {
    incumbent = pinned->config;
  } else if (auto row = plan.table.rows.find(bucket); row != plan.table.rows.end()) {
    incumbent = row->second.config;  // --merge: the current row defends its place
  }
  auto r = tune_one(request, plan, ctx, bucket, incumbent, neighbour_seeds(winners, bucket));
  if (!r.ok()) return r.error();
  if (!r->ok) {
    ctx.observer->bucket_failed(plan, bucket, *r);
    return false;
  }
  std::string const command = reproduce_command(request, plan.backend_name, bucket, plan.out_dir,
                                                !plan.retargeted_from.empty());
  ctx.observer->bucket_tuned(bucket, *r, command, pinned);
  if (pinned != nullptr) return true;
  winners[bucket] = r->winner;
  plan.table.rows[bucket] = tuned_row(request, plan, *r, command);
  return true;
}

/// Tunes one planned shape and writes its table. False when every candidate of a bucket failed
/// (the run stops there).
core::Result<bool> tune_shape(TuneRequest const& request, ShapePlan& plan, RunContext& ctx) {
  ctx.observer->shape_started(plan);
  std::map<int64_t, core::MoeConfig> winners;  // seeds of the neighbouring buckets
  bool all_ok = true;
  for (int64_t bucket : plan.buckets) {
    auto ok = tune_shape_bucket(request, plan, ctx, bucket, winners);
    if (!ok.ok()) return ok.error();
    if (!*ok) {
      all_ok = false;
      break;
    }
  }
  for (auto const& [bucket, pin] : plan.shape->pinned_rows) {
    plan.table.rows[bucket] = core::TableRow{.config = pin.config, .source = pin.source};
  }
  auto written = core::save_table(plan.table, plan.out_dir);
  if (!written.ok()) return written.error();
  ctx.observer->shape_written(plan, *written);
  return all_ok;
}

/// Opens the run in the store, with its provenance (the first shape's device and routing).
core::Result<int64_t> begin_run(TuneRequest const& request, std::vector<ShapePlan> const& plans,
                                Store& store) {
  auto recipe_text = core::read_file(request.recipe_path);
  if (!recipe_text.ok()) return recipe_text.error();
  ShapePlan const* first = plans.empty() ? nullptr : &plans[0];
  RunInfo info{.started = utc_now(),
               .recipe_path = request.recipe_path,
               .recipe_hash = hash_text(*recipe_text),
               .commit = core::git_commit(),
               .device = first == nullptr ? "" : first->device.name,
               .driver = first == nullptr ? "" : first->device.driver,
               .toolchain = first == nullptr ? "" : first->device.toolchain,
               .seed = first == nullptr ? 0 : first->shape->routing.seed,
               .routing = first == nullptr ? "" : core::format_routing(first->shape->routing),
               .command = request.command_line};
  return store.begin_run(info);
}

/// The buckets the run tunes: all but the pinned ones, unless --measure-pinned.
int count_buckets(TuneRequest const& request, std::vector<ShapePlan> const& plans) {
  int total = 0;
  for (ShapePlan const& plan : plans) {
    for (int64_t b : plan.buckets) {
      total += !plan.shape->pinned_rows.count(b) || request.measure_pinned;
    }
  }
  return total;
}

}  // namespace

core::Result<TuneOutcome> tune_recipe(TuneRequest const& request, std::vector<ShapePlan>& plans,
                                      TuneObserver& observer) {
  auto store = Store::open(request.store.empty() ? ":memory:" : request.store);
  if (!store.ok()) return store.error();
  RunContext ctx{.store = store->get(), .observer = &observer};
  auto run = begin_run(request, plans, *ctx.store);
  if (!run.ok()) return run.error();
  ctx.run = *run;
  ctx.buckets_total = count_buckets(request, plans);
  if (request.budget_min > 0) {
    ctx.deadline = request.started + std::chrono::milliseconds(int64_t(request.budget_min * 60e3));
  }
  observer.run_started(ctx.buckets_total);
  TuneOutcome outcome{.all_ok = true, .store_path = ctx.store->path(), .run = ctx.run};
  for (ShapePlan& plan : plans) {
    auto ok = tune_shape(request, plan, ctx);
    if (!ok.ok()) return ok.error();
    outcome.all_ok = *ok;
    if (!outcome.all_ok) break;
  }
  return outcome;
}

}  // namespace moetune::tuner
