// The adapter between core's lever resolution (names and booleans; core may not include
// kernels/) and the FastPaths struct kernels read. Each FastPaths field is the lever of the same
// name; the lever table and the struct must name the same set (checked here, and over the whole
// deployment matrix by tests/kernels/cpu/cpu_lever_test.cpp).
#pragma once

#include <string>
#include <vector>

#include "core/lever_resolve.hpp"
#include "core/result.hpp"
#include "kernels/fast_paths.hpp"

namespace moetune::kernels {

/// The FastPaths field names, in declaration order.
std::vector<std::string> const& fast_path_names();

/// FastPaths with each field set from the resolved lever of the same name. Fails (kMismatch)
/// when the resolution lacks a field's lever, or names a lever that is no FastPaths field (a
/// lever must switch real code); the message names the lever and the file to fix.
core::Result<FastPaths> fast_paths_from_levers(core::LeverResolution const& resolution);

/// The deployment of one process on this machine: `backend` ("cpu" or "cuda"), its arch (cpu, or
/// sm90, the one cuda arch built), tp = ep = 1, `dtype` and `role` ("prefill" or "decode").
core::Deployment local_deployment(std::string const& backend, std::string const& dtype,
                                  std::string const& role);

/// Resolves the built-in lever table at `deployment` under `env` and converts it: what a
/// process that launches kernels calls once. Fails as resolve_levers and fast_paths_from_levers.
core::Result<FastPaths> resolve_fast_paths(core::Deployment const& deployment,
                                           core::EnvSnapshot const& env,
                                           std::vector<std::string> const& other_vars);

}  // namespace moetune::kernels
