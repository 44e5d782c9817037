// MoeRunner creation: backend and device ops, the table that matches the problem, the knob cache
// (scope-checked, one warning for stale entries), and the workspace sized for max_tokens.
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>

#include "core/device_label.hpp"
#include "core/lever_io.hpp"
#include "core/names.hpp"
#include "kernels/fast_paths_from_levers.hpp"
#include "kernels/testbed.hpp"
#include "runtime/device_env.hpp"
#include "runtime/runner_impl.hpp"
#if defined(MOETUNE_HAVE_CUDA)
#include "kernels/cuda/cuda_backend.hpp"
#endif

extern char** environ;

namespace moetune {
namespace {

std::string env_or_empty(char const* name) {
  char const* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

core::Error setup_error(std::string message) {
  return core::make_error(core::ErrorCode::kInvalidArgument, "MoeRunner", std::move(message));
}

/// The lever table's arch for a device arch: "cpu" -> "cpu", "sm_90a" -> "sm90", "sm_100" ->
/// "sm100", "sm_86" -> "sm80" (the table names one arch per major version).
std::string lever_arch(std::string const& device_arch) {
  if (device_arch == "cpu" || device_arch.rfind("sm_", 0) != 0) return device_arch;
  std::string digits;
  for (char c : device_arch.substr(3)) {
    if (c < '0' || c > '9') break;
    digits += c;
  }
  if (digits.size() < 2) return device_arch;
  return "sm" + digits.substr(0, digits.size() - 1) + "0";
}

/// The fast paths of a runner: LeverOptions::fast_paths as given, else the built-in lever table
/// resolved once at the runner's deployment under the environment.
core::Result<RunnerLevers> resolve_runner_levers(LeverOptions const& o, std::string const& backend,
                                                 core::DeviceInfo const& device,
                                                 core::MoeProblem const& p) {
  RunnerLevers out;
  if (o.fast_paths) {
    out.fast_paths = *o.fast_paths;
    out.origin = "options";
    return out;
  }
  core::Deployment d;
  d.backend = backend;
  d.arch = lever_arch(device.arch.empty() ? p.arch : device.arch);
  d.tp = o.tp;
  d.ep = o.ep;
  d.dtype = std::string(core::to_string(p.dtype));
  d.role = o.role;
  std::string const where = "MoeRunner levers at " + core::to_string(d);
  MOETUNE_RETURN_IF_ERROR(core::validate(d, where));
  auto const& table = core::builtin_lever_table();
  if (!table.ok()) return table.error();
  core::EnvSnapshot const env = o.env ? *o.env : core::snapshot_environment(environ);
  auto resolution = core::resolve_levers(*table, d, env, o.known_env_vars);
  if (!resolution.ok()) {
    return core::make_error(resolution.error().code, "MoeRunner", resolution.error().to_string());
  }
  auto fp = kernels::fast_paths_from_levers(*resolution);
  if (!fp.ok()) return fp.error();
  out.fast_paths = *fp;
  out.origin = "environment";
  out.deployment = d;
  out.levers = resolution->levers;
  return out;
}

}  // namespace

std::vector<std::string> const& project_env_vars() {
  // The non-lever names of the CLI's environment table (src/cli/main.cpp, README); a test
  // (tests/cli/run_test.cpp) keeps the two lists equal.
  static std::vector<std::string> const names = {
      "MOETUNE_BACKEND",     "MOETUNE_CACHE_DIR",
      "MOETUNE_CACHE",       "MOETUNE_DEV_NVRTC_DEFINES",
      "MOETUNE_TEST_SEED",   "MOETUNE_BUILD_DIR",
      "MOETUNE_CUDA",        "MOETUNE_JOBS",
      "MOETUNE_DEMO_OUT",    "MOETUNE_DEMO_RECIPE",
      "MOETUNE_CI_FORMAT",   "MOETUNE_TABLES",
      "MOETUNE_PYTHON",      "MOETUNE_TORCH_VERSION",
      "MOETUNE_DEVICE_NAME", "MOETUNE_TABLES_SAME_DEVICE"};
  return names;
}

std::string on_names(kernels::FastPaths const& fp) { return kernels::enabled_names(fp); }

std::string default_knob_cache_path(std::string const& role) {
  std::string const env = env_or_empty("MOETUNE_CACHE");
  if (!env.empty()) return env;
  std::string home = env_or_empty("XDG_CACHE_HOME");
  if (home.empty()) home = env_or_empty("HOME").empty() ? "." : env_or_empty("HOME") + "/.cache";
  return home + "/moetune/knobs-" + (role.empty() ? "default" : role) + ".json";
}

/// A role names the knob cache file (knobs-<role>.json in the cache directory), so it is one
/// file-name word: letters, digits, '-', '_' and '.' but not "." or ".." alone; "../x" would
/// put the cache outside its directory.
core::Status check_role(std::string const& role) {
  bool ok = role != "." && role != ".." && role.size() <= 64;
  for (char c : role) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.');
  }
  if (ok) return core::Status::Ok();
  return setup_error("role '" + core::clip(role) +
                     "' is not a file-name word (it names knobs-<role>.json in the cache "
                     "directory); use letters, digits, '-', '_' or '.', e.g. prefill");
}

core::Status RunnerImpl::setup(core::MoeProblem p, std::string const& name, RunnerOptions opts) {
  options = std::move(opts);
  MOETUNE_RETURN_IF_ERROR(check_role(options.role));
  if (options.max_tokens < 1 || options.max_tokens > core::kMaxTokens) {
    return setup_error("max_tokens = " + std::to_string(options.max_tokens) + " is outside [1, " +
                       std::to_string(core::kMaxTokens) + "]");
  }
  if (!(options.auto_budget_s > 0)) {
    return setup_error("auto_budget_s must be > 0 seconds");
  }
  auto b = kernels::make_backend(name);
  if (!b.ok()) return b.error();
  backend = std::move(*b);
  backend_name = name;
  core::DeviceInfo const device = backend->device();
  auto label = core::local_device_label(device);
  if (!label.ok()) return label.error();
  device_label = *label;
  auto same_device = runtime::same_device_tables_from_env();
  if (!same_device.ok()) return same_device.error();
  options.same_device_tables = options.same_device_tables || *same_device;
  p.num_tokens = 0;
  p.arch = device.arch.empty() ? p.arch : device.arch;  // the runner serves on this device
  MOETUNE_RETURN_IF_ERROR(core::validate(p));
  problem = p;
  // Levers once, before anything asks the backend for a default or a verdict.
  auto lv = resolve_runner_levers(options.levers, name, device, problem);
  if (!lv.ok()) return lv.error();
  levers = std::move(lv).value();
#if defined(MOETUNE_HAVE_CUDA)
  if (auto* cuda = dynamic_cast<kernels::cuda::CudaBackend*>(backend.get())) {
    cuda->set_fast_paths(levers.fast_paths);
  }
#endif
  if (levers.fast_paths.batch_invariant) {
    auto c = backend->batch_invariant_config(problem);  // the same check every M meets later
    if (!c.ok()) return core::make_error(c.error().code, "MoeRunner", c.error().to_string());
  }
  auto o = runtime::make_device_ops(name, *backend, levers.fast_paths);
  if (!o.ok()) return o.error();
  ops = std::move(*o);
  MOETUNE_RETURN_IF_ERROR(load_matching_table());
  MOETUNE_RETURN_IF_ERROR(load_scoped_knob_cache(device));
  return reserve_known_workspace();
}

core::Status RunnerImpl::load_matching_table() {
  if (options.tables_dir.empty()) return core::Status::Ok();
  auto files = core::list_table_files(options.tables_dir);
  if (!files.ok() && files.error().code != core::ErrorCode::kNotFound) return files.error();
  for (std::string const& f : files.ok() ? *files : std::vector<std::string>{}) {
    auto t = core::load_table(f);
    if (!t.ok()) return t.error();  // a broken table is an error, never skipped
    if (t->key.family != backend->family()) continue;
    if (!core::check_key_matches(t->key, problem, f).ok()) continue;
    bool const other = core::is_other_device(t->key.device_name, device_label);
    if (other && options.same_device_tables) {
      warn(runtime::other_device_note(f, t->key.device_name, device_label) +
           "; not used (same_device_tables / MOETUNE_TABLES_SAME_DEVICE=1): the knob cache or "
           "the default config serves");
      continue;
    }
    if (table) {
      // The first match stays, unless it was made on another device and this one was not.
      bool const replace = !table_device.empty() && !other;
      warn("several tables in " + options.tables_dir + " match " + core::to_string(problem) +
           "; using " + (replace ? f : table_path) + ", not " + (replace ? table_path : f) +
           (replace ? " (made on another device)" : ""));
      if (!replace) continue;
    }
    table = std::move(*t);
    table_path = f;
    table_device = other ? table->key.device_name : "";
  }
  return core::Status::Ok();
}

core::Status RunnerImpl::load_scoped_knob_cache(core::DeviceInfo const& device) {
  cache_path =
      options.cache_path.empty() ? default_knob_cache_path(options.role) : options.cache_path;
  scope = runtime::make_scope(device, backend->family(), backend->family_version(), problem,
                              options.routing);
  auto file = runtime::load_knob_cache(cache_path);
  if (!file.ok()) return file.error();
  runtime::ScopedEntries sel = runtime::select_entries(*file, scope, cache_path);
  cache = std::move(sel.usable);
  if (!sel.warning.empty()) warn(sel.warning);
  return core::Status::Ok();
}

core::Status RunnerImpl::reserve_known_workspace() {
  // Workspace for every config known now; configs met later (explicit, auto) grow it once, off
  // the hot path. A caller_workspace runner holds none: each run brings its own.
  if (options.caller_workspace) return core::Status::Ok();
  std::vector<core::MoeConfig> known;
  for (int64_t m = 1;; m = std::min(m * 2, options.max_tokens)) {
    known.push_back(backend->default_config(at(m)));
    if (levers.fast_paths.batch_invariant) {
      if (auto c = backend->batch_invariant_config(at(m)); c.ok()) known.push_back(*c);
    }
    if (m == options.max_tokens) break;
  }
  // Only configs that can run size it: a row outside the config ranges (split_k 65536) is never
  // launched as it is, and sizing a workspace from it asked for terabytes.
  auto add = [&](core::MoeConfig const& c) {
    if (core::validate(c).ok()) known.push_back(c);
  };
  if (table) {
    for (auto const& [key, row] : table->rows) add(row.config);
  }
  for (auto const& e : cache) add(e.config);
  return ops->reserve(problem, options.max_tokens, known);
}

}  // namespace moetune
