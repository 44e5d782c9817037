// The two GPU ceilings every cuda floor is computed from, measured in the same run as the kernels:
// device-to-device copy bandwidth (read + write counted) and sustained bf16 matmul rate (cuBLAS
// 8192^3, random data, median of back-to-back runs), and the fp8 rate of fp8 problems' floors
// (cuBLASLt e4m3 8192^3, the same protocol); plus cuBLAS on one dense GEMM, the kernel
// benchmark's --dense yardstick. Compiled only with CUDA (MOETUNE_HAVE_CUDA); `moetune bench`
// reaches it through ceilings.hpp, bench/sm90_bench.cpp directly.
#pragma once

#include <string>

namespace moetune::bench {

struct GpuCeilings {
  double copy_GBps = 0;
  double matmul_TFLOPs = 0;
  std::string matmul_source;  ///< "cublas" or why it is missing
  double fp8_TFLOPs = 0;      ///< e4m3 x e4m3, fp32 accumulation (cuBLASLt 8192^3)
  std::string fp8_source;     ///< "cublasLt" or why it is missing
};

/// Measures all three on GPU 0; cuBLAS and cuBLASLt are loaded with dlopen (libcublas.so.13,
/// libcublasLt.so.13, or unversioned), so a missing one gives its rate 0 and the reason in its
/// source.
GpuCeilings measure_gpu_ceilings(int matmul_reps = 200);

/// The dense equivalent of a grouped GEMM, for moetune_sm90_bench --dense: median microseconds of
/// one cuBLAS bf16 GEMM C [m x n] = A [m x k] @ B [n x k]^T (random data, fp32 accumulation,
/// default algorithm), `reps` launches back to back after 3 warm-ups; 0 when cuBLAS is missing or
/// the buffers do not fit. The buffers are kept (and grow) between calls.
double cublas_dense_us(long m, long n, long k, int reps);

}  // namespace moetune::bench
