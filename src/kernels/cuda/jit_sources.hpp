// The device sources (*.cuh of this folder) embedded at build time, as (file name, text) pairs.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace moetune::kernels::cuda {

/// Every .cuh of src/kernels/cuda, by file name; NVRTC resolves #include "x.cuh" against these.
std::vector<std::pair<std::string, std::string>> const& jit_sources();

}  // namespace moetune::kernels::cuda
