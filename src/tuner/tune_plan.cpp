// Planning each shape of a tune run; see tune_plan.hpp.
#include "tuner/tune_plan.hpp"

#include <cstdlib>

#include "core/atomic_file.hpp"
#include "core/device_label.hpp"
#include "core/engine_rows.hpp"
#include "core/json_text.hpp"
#include "kernels/backend_choice.hpp"
#include "kernels/cpu/moe_data.hpp"
#include "tuner/protocol.hpp"
#include "tuner/search.hpp"
#include "tuner/store.hpp"

namespace moetune::tuner {
namespace {

core::Error bad_input(std::string where, std::string message) {
  return core::make_error(core::ErrorCode::kInvalidArgument, std::move(where), std::move(message));
}

/// The backend a shape is tuned on: --backend / $MOETUNE_BACKEND when given, else the shape's.
/// A table's family is fixed by its recipe, so a mismatch is an error, not a silent switch.
core::Result<std::string> pick_backend(TuneRequest const& request, core::RecipeShape const& shape,
                                       std::string const& where) {
  std::string chosen = request.backend;
  std::string origin = "--backend";
  if (chosen.empty() && std::getenv("MOETUNE_BACKEND") != nullptr) {
    auto from_env = kernels::default_backend();
    if (!from_env.ok()) return from_env.error();
    chosen = *from_env;
    origin = "MOETUNE_BACKEND";
  }
  auto const wanted =
      shape.backend.empty() ? kernels::default_backend() : core::Result<std::string>(shape.backend);
  if (!wanted.ok()) return wanted.error();
  if (!chosen.empty() && chosen != *wanted) {
    return bad_input(where, "the shape is tuned on backend '" + *wanted + "' (family " +
                                shape.family + ") but " + origin + " is '" + chosen + "'; drop " +
                                origin + " or use a recipe for " + chosen);
  }
  MOETUNE_RETURN_IF_ERROR(kernels::check_backend_name(*wanted, where + ": backend"));
  // A bad MOETUNE_* variable fails before any run.
  MOETUNE_RETURN_IF_ERROR(kernels::fast_paths_from_env(*wanted, request.env_var_names));
  return *wanted;
}

/// One worker per backend, started on first use; its hello says whether the backend works here.
core::Result<WorkerClient*> worker_for(WorkerPool& pool, std::string const& backend,
                                       std::string const& where, core::DeviceInfo* device) {
  auto& slot = pool[backend];
  if (!slot) slot = std::make_unique<WorkerClient>(WorkerOptions{.backend = backend});
  auto hello = slot->hello();
  if (!hello.ok()) {
    return bad_input(where, "the recipe's backend is " + backend + ", which is unavailable here (" +
                                hello.error().to_string() +
                                "); run on a machine with a GPU, or tune a " +
                                "recipe whose backend is cpu (e.g. recipes/demo.json)");
  }
  *device = hello->device;
  return slot.get();
}

std::string tune_hash(TuneRequest const& request, core::RecipeShape const& shape,
                      std::string const& backend) {
  // Everything that changes a measurement; the store reads back only what matches it.
  return hash_text(
      core::to_json_text(shape.problem, -1) + "|" + core::format_routing(shape.routing) + "|" +
      backend + "|" + shape.family + "|" + std::to_string(shape.family_version) + "|w" +
      std::to_string(request.warmup) + "|r" + std::to_string(request.reps) +
      (request.exhaustive ? "|exhaustive" : "") +
      (request.stage2_gemm1s != 1 ? "|stage2-gemm1s" + std::to_string(request.stage2_gemm1s) : "") +
      (request.paired_passes ? "|paired-passes" : "") + "|protocol" +
      std::to_string(kProtocolVersion) + "|search" + std::to_string(kSearchVersion));
}

/// A table is named for the device it was measured on: a recipe of another device is refused
/// (both names) unless --retarget-device, which names the table for this device and tunes the
/// recipe's pinned buckets too (the pins were measured on the recipe's device).
core::Status check_device(TuneRequest const& request, core::RecipeShape& shape, ShapePlan& plan) {
  auto label = core::local_device_label(plan.device);
  if (!label.ok()) return label.error();
  plan.device_label = *label;
  std::string const wanted = core::device_label(shape.device);
  if (wanted == plan.device_label) return core::Status::Ok();
  if (!request.retarget_device) {
    return bad_input(plan.where, "the recipe's device is " + wanted + " but this device is " +
                                     plan.device_label + " (" + plan.device.name +
                                     "); a table is named for the device it was measured on: "
                                     "tune on " +
                                     wanted +
                                     ", or pass --retarget-device to tune the recipe for " +
                                     plan.device_label +
                                     " (tables named device_name=" + plan.device_label + ")");
  }
  plan.retargeted_from = wanted;
  shape.pinned_rows.clear();
  return core::Status::Ok();
}

/// The table a shape writes: its key and path, and under --merge the rows already there.
core::Status plan_table(TuneRequest const& request, ShapePlan& plan) {
  core::RecipeShape const& shape = *plan.shape;
  core::TableKey key = core::table_key_for(shape, plan.device.toolchain);
  if (!plan.retargeted_from.empty()) key.device_name = plan.device_label;
  plan.path = plan.out_dir + "/" + core::table_file_name(key);
  if (request.merge) {
    auto existing = core::load_table(plan.path);
    if (existing.ok()) {
      plan.table = std::move(existing).value();
    } else if (existing.error().code != core::ErrorCode::kNotFound) {
      return existing.error();
    }
  }
  plan.table.key = key;
  plan.table.policy = shape.policy;
  plan.table.has_manifest = true;
  return core::Status::Ok();
}

/// The worker generates each bucket's inputs on the host: refuse a size this machine cannot hold
/// here, as bad input, before the worker dies of it.
core::Status check_host_memory(ShapePlan const& plan) {
  if (plan.buckets.empty()) return core::Status::Ok();
  core::MoeProblem largest = plan.shape->problem;
  largest.num_tokens = plan.buckets.back();
  return core::check_host_bytes(kernels::cpu::host_bytes_estimate(largest), plan.where,
                                "bucket M=" + std::to_string(largest.num_tokens),
                                "tune smaller buckets (--buckets)");
}

core::Result<ShapePlan> plan_shape(TuneRequest const& request, core::Recipe& recipe, size_t index,
                                   WorkerPool& pool) {
  ShapePlan plan;
  plan.shape = &recipe.shapes[index];
  core::RecipeShape const& shape = *plan.shape;
  plan.where = request.recipe_path + ": shapes[" + std::to_string(index) + "] (" + shape.name + ")";
  auto backend = pick_backend(request, shape, plan.where);
  if (!backend.ok()) return backend.error();
  plan.backend_name = *backend;
  if (!request.out_dir.empty()) MOETUNE_RETURN_IF_ERROR(core::ensure_writable_dir(request.out_dir));
  auto worker = worker_for(pool, plan.backend_name, plan.where, &plan.device);
  if (!worker.ok()) return worker.error();
  plan.worker = *worker;
  MOETUNE_RETURN_IF_ERROR(check_device(request, recipe.shapes[index], plan));
  plan.out_dir = !request.out_dir.empty()       ? request.out_dir
                 : plan.retargeted_from.empty() ? "tables/" + core::vllm_device_name(shape.device)
                                                : "tables/" + plan.device_label;
  MOETUNE_RETURN_IF_ERROR(core::ensure_writable_dir(plan.out_dir));
  MOETUNE_RETURN_IF_ERROR(plan_table(request, plan));
  plan.buckets = request.buckets.empty() ? shape.buckets : request.buckets;
  MOETUNE_RETURN_IF_ERROR(check_host_memory(plan));
  plan.tune_hash = tune_hash(request, shape, plan.backend_name);
  return plan;
}

}  // namespace

core::Result<std::vector<ShapePlan>> plan_shapes(TuneRequest const& request, core::Recipe& recipe,
                                                 WorkerPool& pool) {
  std::vector<ShapePlan> plans;
  for (size_t i = 0; i < recipe.shapes.size(); ++i) {
    auto plan = plan_shape(request, recipe, i, pool);
    if (!plan.ok()) return plan.error();
    plans.push_back(std::move(plan).value());
  }
  return plans;
}

}  // namespace moetune::tuner
