// FastPaths from a lever resolution (fast_paths_from_levers.hpp).
#include "kernels/fast_paths_from_levers.hpp"

#include <utility>

#include "core/lever_io.hpp"

namespace moetune::kernels {
namespace {

/// Field name -> member pointer, one entry per FastPaths field.
std::vector<std::pair<std::string, bool FastPaths::*>> const& fields() {
  static std::vector<std::pair<std::string, bool FastPaths::*>> const table = {
      {"align_multi_cta", &FastPaths::align_multi_cta},
      {"wgmma_mainloop", &FastPaths::wgmma_mainloop},
      {"cpu_register_tiles", &FastPaths::cpu_register_tiles},
      {"pdl", &FastPaths::pdl},
      {"batch_invariant", &FastPaths::batch_invariant},
  };
  return table;
}

}  // namespace

std::vector<std::string> const& fast_path_names() {
  static std::vector<std::string> const names = [] {
    std::vector<std::string> out;
    for (auto const& [name, member] : fields()) out.push_back(name);
    return out;
  }();
  return names;
}

core::Result<FastPaths> fast_paths_from_levers(core::LeverResolution const& resolution) {
  FastPaths fp;
  for (auto const& [name, member] : fields()) {
    core::ResolvedLever const* lever = resolution.find(name);
    if (lever == nullptr) {
      return core::make_error(
          core::ErrorCode::kMismatch, core::kLeverTablePath,
          "no lever '" + name + "' for FastPaths::" + name + "; declare it in the lever table");
    }
    fp.*member = lever->on;
  }
  for (auto const& lever : resolution.levers) {
    bool known = false;
    for (auto const& [name, member] : fields()) known = known || name == lever.name;
    if (!known) {
      return core::make_error(core::ErrorCode::kMismatch, core::kLeverTablePath,
                              "lever '" + lever.name +
                                  "' is no FastPaths field, so it switches no code; add the field "
                                  "to src/kernels/fast_paths.hpp or remove the lever");
    }
  }
  return fp;
}

core::Deployment local_deployment(std::string const& backend, std::string const& dtype,
                                  std::string const& role) {
  core::Deployment d;
  d.backend = backend;
  d.arch = backend == "cpu" ? "cpu" : "sm90";
  d.dtype = dtype;
  d.role = role;
  return d;
}

core::Result<FastPaths> resolve_fast_paths(core::Deployment const& deployment,
                                           core::EnvSnapshot const& env,
                                           std::vector<std::string> const& other_vars) {
  auto const& table = core::builtin_lever_table();
  if (!table.ok()) return table.error();
  auto resolution = core::resolve_levers(*table, deployment, env, other_vars);
  if (!resolution.ok()) return resolution.error();
  return fast_paths_from_levers(*resolution);
}

}  // namespace moetune::kernels
