// The backend names, the default backend and the environment's fast paths; see backend_choice.hpp.
#include "kernels/backend_choice.hpp"

#include <unistd.h>

#include <cstdlib>

#include "core/lever_resolve.hpp"
#include "core/names.hpp"
#include "kernels/fast_paths_from_levers.hpp"
#include "kernels/testbed.hpp"

namespace moetune::kernels {

core::Result<std::string> default_backend() {
  char const* env = std::getenv("MOETUNE_BACKEND");
  if (env != nullptr && *env != '\0') {
    MOETUNE_RETURN_IF_ERROR(check_backend_name(env, "MOETUNE_BACKEND"));
    return std::string(env);
  }
  return default_backend_name();
}

core::Status check_backend_name(std::string const& name, std::string const& where) {
  for (auto const& known : kBackendNames) {
    if (name == known) return core::Status::Ok();
  }
  return core::make_error(core::ErrorCode::kInvalidArgument, where,
                          "unknown backend '" + name + "'; expected cpu, cuda or triton" +
                              core::did_you_mean(name, kBackendNames));
}

core::Result<FastPaths> fast_paths_from_env(std::string const& backend,
                                            std::vector<std::string> const& other_vars) {
  const core::Deployment d = local_deployment(backend, "bf16", "prefill");
  auto fp = resolve_fast_paths(d, core::snapshot_environment(environ), other_vars);
  if (!fp.ok()) {
    return core::make_error(core::ErrorCode::kInvalidArgument, "environment",
                            fp.error().to_string());
  }
  return *fp;
}

}  // namespace moetune::kernels
