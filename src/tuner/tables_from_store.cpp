// Tables rebuilt from a tune store; see tables_from_store.hpp.
#include "tuner/tables_from_store.hpp"

#include <map>
#include <optional>

#include "core/engine_rows.hpp"
#include "tuner/search.hpp"

namespace moetune::tuner {
namespace {

/// The latest decision per (table file, bucket): decisions() reads them in the order recorded.
using LatestDecisions = std::map<std::pair<std::string, int64_t>, Decision>;

LatestDecisions latest_decisions(std::vector<Decision> const& all) {
  LatestDecisions latest;
  for (Decision const& d : all) latest[{d.shape, d.bucket}] = d;
  return latest;
}

/// The winner's last ok final-round measurement of the decision's run (its digest).
std::optional<Measurement> winner_measurement(std::vector<Measurement> const& run,
                                              Decision const& d) {
  std::optional<Measurement> found;
  for (Measurement const& m : run) {
    if (m.shape == d.shape && m.key.bucket == d.bucket && m.key.round >= kFinalRound &&
        m.outcome == Outcome::kOk && m.key.config == d.winner) {
      found = m;
    }
  }
  return found;
}

/// A tuned row's source from the store: the decision's times, verdict and agreement, the winner's
/// digest, the run's date, device and command.
core::Source rebuilt_source(Decision const& d, RunInfo const& run,
                            std::optional<Measurement> const& m, std::string const& store_path) {
  core::Source s;
  s.kind = "tuned";
  s.date = run.started.substr(0, 10);
  s.device = run.device;
  s.protocol = "rebuilt from tune store " + store_path + " (run " + std::to_string(d.run) +
               ", moetune " + run.commit + ", routing " + run.routing + "): the bucket's latest " +
               "decision, verdict " + d.verdict;
  s.numbers = {{"time_us", d.winner_us},
               {"default_us", d.incumbent_us},
               {"challenger_us", d.challenger_us},
               {"tie", d.verdict == "tie" ? 1.0 : 0.0},
               {"agreement", d.agreement}};
  if (m) s.digest = m->digest;  // the interval was pooled over passes: not rebuilt here
  s.command = run.command;
  return s;
}

/// Reads (once) what the rows of one run need: its provenance and measurements.
struct RunCache {
  Store& store;
  std::map<int64_t, std::pair<RunInfo, std::vector<Measurement>>> runs;

  core::Result<std::pair<RunInfo, std::vector<Measurement>> const*> get(int64_t run) {
    if (auto it = runs.find(run); it != runs.end()) return &it->second;
    auto info = store.run_info(run);
    if (!info.ok()) return info.error();
    auto measured = store.measurements(run);
    if (!measured.ok()) return measured.error();
    return &(runs[run] = {std::move(info).value(), std::move(measured).value()});
  }
};

/// One shape's table: the store's row for each bucket the recipe does not pin, then the pins.
core::Result<core::Table> shape_table(core::RecipeShape const& shape, std::string const& where,
                                      LatestDecisions const& latest, RunCache& runs,
                                      std::string const& recipe_path) {
  core::Table table;
  table.key = core::table_key_for(shape);
  table.policy = shape.policy;
  table.has_manifest = true;
  std::string const file = core::table_file_name(table.key);
  for (int64_t const bucket : shape.buckets) {
    if (shape.pinned_rows.count(bucket)) continue;
    auto d = latest.find({file, bucket});
    if (d == latest.end()) {
      return core::make_error(core::ErrorCode::kNotFound, where,
                              "the store holds no decision for " + file + " bucket " +
                                  std::to_string(bucket) +
                                  "; tune it into this store (moetune "
                                  "tune --recipe " +
                                  recipe_path + " --buckets " + std::to_string(bucket) +
                                  " --store " + runs.store.path() + ")");
    }
    auto run = runs.get(d->second.run);
    if (!run.ok()) return run.error();
    auto const& [info, measured] = **run;
    if (table.key.toolchain.empty()) table.key.toolchain = info.toolchain;
    table.rows[bucket] = core::TableRow{
        .config = d->second.winner,
        .source = rebuilt_source(d->second, info, winner_measurement(measured, d->second),
                                 runs.store.path())};
  }
  for (auto const& [bucket, pin] : shape.pinned_rows) {
    table.rows[bucket] = core::TableRow{.config = pin.config, .source = pin.source};
  }
  return table;
}

}  // namespace

core::Result<std::vector<core::Table>> tables_from_store(Store& store, core::Recipe const& recipe,
                                                         std::string const& recipe_path) {
  auto all = store.decisions();
  if (!all.ok()) return all.error();
  LatestDecisions const latest = latest_decisions(*all);
  RunCache runs{.store = store};
  std::vector<core::Table> tables;
  for (size_t i = 0; i < recipe.shapes.size(); ++i) {
    std::string const where =
        recipe_path + ": shapes[" + std::to_string(i) + "] (" + recipe.shapes[i].name + ")";
    auto table = shape_table(recipe.shapes[i], where, latest, runs, recipe_path);
    if (!table.ok()) return table.error();
    tables.push_back(std::move(table).value());
  }
  return tables;
}

}  // namespace moetune::tuner
