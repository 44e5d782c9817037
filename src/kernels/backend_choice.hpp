// Which kernel backend a process runs on: the names a build may know, the default
// ($MOETUNE_BACKEND, else the kernels' pick for this machine), and the fast paths the environment
// selects for a backend. The tune pipeline (tuner/tune_plan.hpp) and the CLI's --backend share it.
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"
#include "kernels/fast_paths.hpp"

namespace moetune::kernels {

/// The backends a build may know (triton: vLLM's Triton kernel in a Python worker).
inline const std::vector<std::string> kBackendNames = {"cpu", "cuda", "triton"};

/// $MOETUNE_BACKEND when set and not empty, else kernels::default_backend_name(). Fails
/// (kInvalidArgument naming MOETUNE_BACKEND) when the variable names no backend.
core::Result<std::string> default_backend();

/// Checks a backend name: "cpu", "cuda" or "triton"; otherwise kInvalidArgument at `where`, with
/// "did you mean".
core::Status check_backend_name(std::string const& name, std::string const& where);

/// The fast paths (levers) a process on `backend` takes under this environment: the built-in
/// lever table resolved at deployment backend/arch, tp 1, ep 1, bf16, role prefill, with
/// MOETUNE_LEVER_<NAME> knobs applied. `other_vars`: the MOETUNE_* variables that are not levers
/// (the CLI's table). A bad MOETUNE_* variable is kInvalidArgument at "environment".
core::Result<FastPaths> fast_paths_from_env(std::string const& backend,
                                            std::vector<std::string> const& other_vars);

}  // namespace moetune::kernels
