// The two ceilings every floor is computed from, measured in the same run as the kernels
// (shared/anchors/h200-baseline.md): device-to-device copy bandwidth (read + write counted) and
// sustained bf16 matmul rate (cuBLAS 8192^3, random data, median of back-to-back runs).
#pragma once

#include <string>

struct Ceilings {
  double copy_GBps = 0;
  double matmul_TFLOPs = 0;
  std::string matmul_source;  // "cublas" or why it is missing
};

/// Measures both; cuBLAS is loaded with dlopen (libcublas.so.13 / .so).
Ceilings measure_ceilings(int matmul_reps = 200);

/// The dense equivalent of a grouped GEMM, for moetune_sm90_bench --dense: median microseconds of
/// one cuBLAS bf16 GEMM C [m x n] = A [m x k] @ B [n x k]^T (random data, fp32 accumulation,
/// default algorithm), `reps` launches back to back after 3 warm-ups; 0 when cuBLAS is missing or
/// the buffers do not fit. The buffers are kept (and grow) between calls.
double cublas_dense_us(long m, long n, long k, int reps);
