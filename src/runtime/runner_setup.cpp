// MoeRunner creation: backend and device ops, the table that matches the problem, the knob cache
// (scope-checked, one warning for stale entries), and the workspace sized for max_tokens.
#include <cstdlib>
#include <filesystem>

#include "kernels/testbed.hpp"
#include "runtime/runner_impl.hpp"

namespace moetune {
namespace {

std::string env_or_empty(char const* name) {
  char const* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

core::Error setup_error(std::string message) {
  return core::make_error(core::ErrorCode::kInvalidArgument, "MoeRunner", std::move(message));
}

}  // namespace

std::string default_knob_cache_path(std::string const& role) {
  std::string const env = env_or_empty("MOETUNE_CACHE");
  if (!env.empty()) return env;
  std::string home = env_or_empty("XDG_CACHE_HOME");
  if (home.empty()) home = env_or_empty("HOME").empty() ? "." : env_or_empty("HOME") + "/.cache";
  return home + "/moetune/knobs-" + (role.empty() ? "default" : role) + ".json";
}

core::Status RunnerImpl::setup(core::MoeProblem p, std::string const& name, RunnerOptions opts) {
  options = std::move(opts);
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
  p.num_tokens = 0;
  p.arch = device.arch.empty() ? p.arch : device.arch;  // the runner serves on this device
  MOETUNE_RETURN_IF_ERROR(core::validate(p));
  problem = p;
  auto o = runtime::make_device_ops(name, *backend);
  if (!o.ok()) return o.error();
  ops = std::move(*o);

  if (!options.tables_dir.empty()) {
    auto files = core::list_table_files(options.tables_dir);
    if (!files.ok() && files.error().code != core::ErrorCode::kNotFound) return files.error();
    for (std::string const& f : files.ok() ? *files : std::vector<std::string>{}) {
      auto t = core::load_table(f);
      if (!t.ok()) return t.error();  // a broken table is an error, never skipped
      if (t->key.family != backend->family()) continue;
      if (!core::check_key_matches(t->key, problem, f).ok()) continue;
      if (table) {
        warn("several tables in " + options.tables_dir + " match " + core::to_string(problem) +
             "; using " + table_path + ", not " + f);
        continue;
      }
      table = std::move(*t);
      table_path = f;
    }
  }

  cache_path =
      options.cache_path.empty() ? default_knob_cache_path(options.role) : options.cache_path;
  scope = runtime::make_scope(device, backend->family(), backend->family_version(), problem,
                              options.routing);
  auto file = runtime::load_knob_cache(cache_path);
  if (!file.ok()) return file.error();
  runtime::ScopedEntries sel = runtime::select_entries(*file, scope, cache_path);
  cache = std::move(sel.usable);
  if (!sel.warning.empty()) warn(sel.warning);

  // Workspace for every config known now; configs met later (explicit, auto) grow it once, off
  // the hot path.
  std::vector<core::MoeConfig> known;
  for (int64_t m = 1;; m = std::min(m * 2, options.max_tokens)) {
    known.push_back(backend->default_config(at(m)));
    if (m == options.max_tokens) break;
  }
  if (table) {
    for (auto const& [key, row] : table->rows) known.push_back(row.config);
  }
  for (auto const& e : cache) known.push_back(e.config);
  return ops->reserve(problem, options.max_tokens, known);
}

}  // namespace moetune
