// Ceilings and floors. Every t/floor this project reports divides a measured time by the floor of
// the same run: floor = max(bytes_min / copy_bw, flops / matmul_rate), with
//   bytes_min = experts_hit * (N1*K + K*I) * b + 2*M*K*b + 8*M*top_k   (b = dtype bytes)
// (bench/sm90_bench.cpp's formula: every hit expert's weights once, x read and out written once,
// the routing ids and weights). fp8 problems (quant): the weights at 1 B each plus their fp32
// scales (core::expert_weight_bytes), and flops at the fp8 rate (cuBLASLt e4m3, measured on the
// GPU beside the bf16 one; where it is missing, no compute term: the bandwidth floor). The
// ceilings are measured in the same process, never taken from a data sheet: on the GPU, device copy
// bandwidth and cuBLAS bf16 matmul rate (gpu_ceilings.hpp); on the CPU, a multi-threaded memcpy and
// a plain blocked fp32 GEMM loop on every hardware thread.
#pragma once

#include <cstdint>
#include <string>

#include "core/problem.hpp"

namespace moetune::bench {

/// The two rates a floor is computed from, and how each was measured.
struct Ceilings {
  double copy_GBps = 0;      ///< read + write bytes per second / 1e9
  double matmul_GFLOPs = 0;  ///< sustained multiply-add rate, 2 flops per multiply-add
  std::string copy_source;   ///< "memcpy 128 MiB x 16 threads, median of 7", "cudaMemcpy D2D 4 GiB"
  std::string
      matmul_source;       ///< "plain blocked fp32 loop 192^3 x 16 threads", "cublas bf16 8192^3"
  double fp8_GFLOPs = 0;   ///< e4m3 rate, the compute term of fp8 problems (GPU only; 0 = none)
  std::string fp8_source;  ///< "cublasLt e4m3 8192^3, median of 200", or why it is missing
};

/// Measures the host ceilings (about half a second). `copy_mib` sizes the copied buffer.
Ceilings measure_cpu_ceilings(int copy_mib = 128);
/// Measures the GPU ceilings (gpu_ceilings.hpp); without CUDA in the build, zeros and a
/// source saying so.
Ceilings measure_cuda_ceilings();

/// The floor of one point and what bounds it.
struct Floor {
  double bytes_min = 0;
  double flops = 0;
  double floor_us = 0;
  bool bandwidth_bound = true;  ///< bytes_min / copy_bw >= flops / matmul_rate
};

/// The floor of `problem` (M = num_tokens) with `experts_hit` distinct experts under `c`. A zero
/// ceiling leaves its term out; both zero give floor_us = 0.
Floor floor_for(core::MoeProblem const& problem, int64_t experts_hit, Ceilings const& c);

}  // namespace moetune::bench
