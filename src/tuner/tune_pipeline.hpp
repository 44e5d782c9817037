// The tune pipeline: runs the planned shapes of a recipe (tuner/tune_plan.hpp) bucket by bucket
// through the search (tuner/search.hpp), records every measurement and decision in the store, and
// writes each shape's table: tuned winners with their provenance (tuner/tune_provenance.hpp),
// pinned rows over them. What happens is told to a TuneObserver (the CLI prints it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/recipe.hpp"
#include "core/result.hpp"
#include "tuner/search.hpp"
#include "tuner/tune_plan.hpp"
#include "tuner/tune_request.hpp"

namespace moetune::tuner {

/// Told what a tune run does, in order; it only reports (the pipeline decides).
class TuneObserver {
 public:
  virtual ~TuneObserver() = default;
  /// The run is open in the store; `buckets_total` buckets will be tuned over all shapes.
  virtual void run_started(int buckets_total) = 0;
  /// A shape's tuning begins (its table at plan.path).
  virtual void shape_started(ShapePlan const& plan) = 0;
  /// A pinned bucket: `measured` (--measure-pinned) means it is tuned next, the pin as incumbent,
  /// and reported by bucket_tuned; else it is kept as is.
  virtual void pinned_bucket(int64_t bucket, core::PinnedRow const& pin, bool measured) = 0;
  /// The current bucket (`index`: 1-based over the run) has reached `fraction` of its work.
  virtual void progress(int64_t bucket, int index, double fraction) = 0;
  /// Every candidate of `bucket` failed: the run stops once this shape's table is written.
  virtual void bucket_failed(ShapePlan const& plan, int64_t bucket, BucketResult const& r) = 0;
  /// `bucket` has a winner, reproduced by `command`. `pin`: the bucket's pinned row under
  /// --measure-pinned (the pin stays in the table), else null (the winner is the row written).
  virtual void bucket_tuned(int64_t bucket, BucketResult const& r, std::string const& command,
                            core::PinnedRow const* pin) = 0;
  /// A shape's table was written; `written` is the path save_table names.
  virtual void shape_written(ShapePlan const& plan, std::string const& written) = 0;
};

/// How a run ended.
struct TuneOutcome {
  bool all_ok = true;      ///< false: every candidate of a bucket failed (the run stopped there)
  std::string store_path;  ///< the store's path (":memory:" without --store)
  int64_t run = 0;         ///< the run's id in the store
};

/// Opens the store and a run in it, tunes every planned shape's buckets in order and writes each
/// shape's table (rows tuned so far, when a bucket's candidates all failed; then the run stops).
/// A pinned row wins over a tuned one; --merge keeps the table's other rows, and a bucket's
/// current row is its incumbent. Fails on a store error, an unreadable recipe file, a bucket the
/// worker cannot serve at all (tune_bucket) or a table that cannot be written.
core::Result<TuneOutcome> tune_recipe(TuneRequest const& request, std::vector<ShapePlan>& plans,
                                      TuneObserver& observer);

}  // namespace moetune::tuner
