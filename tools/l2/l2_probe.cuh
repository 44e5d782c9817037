// l2_probe.cuh: what the L2 probes (tools/l2/l2_sides.cu, tools/l2/l2_stream_mix.cu) share beside
// the GEMMs' own primitives (src/kernels/cuda/sm90_tma.cuh, its 1-D bulk_copy_g2s among them): the
// checked CUDA call, the SM id and the multicast form of the 1-D bulk copy. nvcc, sm_90a; each
// probe is one file.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "kernels/cuda/sm90_tma.cuh"

/// Runs a CUDA runtime call; on failure prints the tool (L2_PROBE_NAME), place, call and error,
/// and exits 3.
#define CHECK(call)                                                                                \
  do {                                                                                             \
    cudaError_t err_ = (call);                                                                     \
    if (err_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s: %s:%d: %s failed: %s\n", L2_PROBE_NAME, __FILE__, __LINE__, #call, \
                   cudaGetErrorString(err_));                                                      \
      std::exit(3);                                                                                \
    }                                                                                              \
  } while (0)
#define CHECK_LAUNCH() CHECK(cudaGetLastError())

namespace l2_probe {

/// The SM this thread runs on.
__device__ inline unsigned smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

/// moetune_dev::bulk_copy_g2s (sm90_tma.cuh), delivered to the same offsets in both CTAs of a
/// cluster pair.
__device__ inline void bulk_load_pair(unsigned dst, const void* src, unsigned bytes, unsigned bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], "
      "[%1], %2, [%3], %4;" ::"r"(dst),
      "l"(src), "r"(bytes), "r"(bar), "h"(static_cast<unsigned short>(3))
      : "memory");
}

}  // namespace l2_probe
