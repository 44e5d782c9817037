// Planning a tune run: for each shape of a recipe, the backend it is tuned on, the worker that
// serves it, the device check (--retarget-device), the table it writes (merged under --merge), its
// buckets and its store key (tune hash). Planning checks all bad input before any kernel runs, so
// a failure changes no file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/recipe.hpp"
#include "core/result.hpp"
#include "core/table.hpp"
#include "tuner/tune_request.hpp"
#include "tuner/worker.hpp"

namespace moetune::tuner {

/// One worker per backend, started on first use.
using WorkerPool = std::map<std::string, std::unique_ptr<WorkerClient>>;

/// Everything a shape needs before any kernel runs.
struct ShapePlan {
  core::RecipeShape const* shape = nullptr;  ///< into the planned recipe
  std::string where;                         ///< "recipe.json: shapes[0] (name)", for messages
  std::string backend_name;
  std::string out_dir;
  WorkerClient* worker = nullptr;  ///< into the pool
  core::DeviceInfo device;
  std::string device_label;     ///< this device as table names spell it; names the table
  std::string retargeted_from;  ///< the recipe's device under --retarget-device, else ""
  core::Table table;            ///< the rows written (the existing table's under --merge)
  std::string path;             ///< the table's file
  std::vector<int64_t> buckets;
  std::string tune_hash;  ///< the store key: the store reads back only what matches it
};

/// Plans every shape of `recipe`, starting one worker per backend in `pool` (whose hello says
/// whether the backend works here). The plans point into `recipe` and `pool`, which must outlive
/// them. Under --retarget-device a shape of another device loses its pinned rows (they were
/// measured on that device). Fails (kInvalidArgument naming the shape, or the error of the file
/// or store involved) on a backend mismatch, an unavailable backend, a recipe of another device
/// without --retarget-device, an unwritable out dir, an unreadable table under --merge, or a
/// bucket too large for this host's memory.
core::Result<std::vector<ShapePlan>> plan_shapes(TuneRequest const& request, core::Recipe& recipe,
                                                 WorkerPool& pool);

}  // namespace moetune::tuner
