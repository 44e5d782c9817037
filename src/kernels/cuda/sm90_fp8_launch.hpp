// Host side of the fp8 regime of sm90_gather: align -> quantise x -> GEMM1 + activation (h in
// bf16) -> quantise h -> GEMM2 + routing weight -> combine, on one stream with no host
// synchronisation, in the workspace sm90_gather_workspace_bytes sized (its fp8 regions). Where
// GEMM1 stores h already quantised (fp8_gemm1_writes_hq), the pass over h is not launched.
#pragma once

#include <cuda_runtime.h>

#include "core/problem.hpp"
#include "core/result.hpp"
#include "kernels/cuda/sm90_layer_parts.hpp"

namespace moetune::kernels::cuda {

/// The layer of a quantised problem (p.quant != kNone) for the stages in `stages` (kStage*:
/// GEMM1 includes quantising x, GEMM2 quantising h). The scale arguments must be set as MoeArgs
/// says; a missing one is kInvalidArgument naming it.
core::Status launch_fp8_layer(Sm90GatherKernels const& k, core::MoeProblem const& p,
                              MoeArgs const& args, parts::LayerBuffers const& b,
                              cudaStream_t stream, unsigned stages, FastPaths const& fast_paths);

}  // namespace moetune::kernels::cuda
