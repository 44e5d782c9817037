// Factories of the cuda backend, implemented in src/kernels/cuda/ and compiled only when the
// project is configured with nvcc (MOETUNE_HAVE_CUDA). registry.cpp calls them.
#pragma once

#include <memory>

#include "core/backend.hpp"
#include "core/result.hpp"
#include "kernels/testbed.hpp"

namespace moetune::kernels {

/// The sm90_gather backend (config logic only; works without a GPU, its device() then says so).
core::Result<std::unique_ptr<core::Backend>> make_cuda_backend();
/// A Testbed on GPU 0; fails with the reason when no GPU is usable.
core::Result<std::unique_ptr<Testbed>> make_cuda_testbed();
/// True when the CUDA driver reports at least one device.
bool cuda_device_present();

}  // namespace moetune::kernels
