// GPU ceilings and cuBLAS's dense GEMM; see gpu_ceilings.hpp. The whole file is CUDA-only: a build
// without nvcc compiles it to nothing (ceilings.cpp then reports the ceilings as not measured).
#if defined(MOETUNE_HAVE_CUDA)
#include "bench/gpu_ceilings.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace moetune::bench {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double copy_bandwidth() {
  const size_t bytes = size_t{4} << 30;
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) return 0;
  cudaMemset(a, 1, bytes);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<double> ms;
  for (int i = 0; i < 12; ++i) {
    cudaEventRecord(e0);
    cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float t = 0;
    cudaEventElapsedTime(&t, e0, e1);
    if (i >= 2) ms.push_back(t);
  }
  cudaFree(a);
  cudaFree(b);
  return 2.0 * bytes / (median(ms) * 1e-3) / 1e9;
}

using CreateFn = cublasStatus_t (*)(cublasHandle_t*);
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);

__attribute__((unused)) void fill_random(void* p, size_t n) {
  std::vector<unsigned short> h(n);
  unsigned s = 12345;
  for (auto& v : h) {
    s = s * 1664525u + 1013904223u;
    // bf16 of a value in about [-1, 1): random mantissa, exponent near 0x3f.
    v = static_cast<unsigned short>(0x3c00 + ((s >> 16) & 0x03ff) + ((s >> 8) & 0x8000));
  }
  cudaMemcpy(p, h.data(), n * 2, cudaMemcpyHostToDevice);
}

/// cuBLAS, loaded once with dlopen (libcublas.so.13 / .so); `why` says what is missing.
struct Cublas {
  CreateFn create = nullptr;
  GemmExFn gemm = nullptr;
  cublasHandle_t handle = nullptr;
  std::string why;
  static Cublas& get() {
    static Cublas c = [] {
      Cublas c;
      void* lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
      if (!lib) lib = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
      c.create = lib ? reinterpret_cast<CreateFn>(dlsym(lib, "cublasCreate_v2")) : nullptr;
      c.gemm = lib ? reinterpret_cast<GemmExFn>(dlsym(lib, "cublasGemmEx")) : nullptr;
      if (!c.create || !c.gemm) {
        c.why = "cublas unavailable";
      } else if (c.create(&c.handle) != CUBLAS_STATUS_SUCCESS) {
        c.why = "cublasCreate failed";
      }
      return c;
    }();
    return c;
  }
  bool ok() const { return why.empty(); }
  /// C [m x n] = A [m x k] @ B [n x k]^T, all row-major (bf16 in and out, fp32 accumulation); in
  /// cuBLAS's column-major terms C^T = op_T(B) @ A^T, so both operands are read along k.
  bool run(long m, long n, long k, const void* a, const void* b, void* c_out) const {
    const float alpha = 1.0f, beta = 0.0f;
    return gemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                static_cast<int>(k), &alpha, b, CUDA_R_16BF, static_cast<int>(k), a, CUDA_R_16BF,
                static_cast<int>(k), &beta, c_out, CUDA_R_16BF, static_cast<int>(n),
                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
  }
};

/// Device buffers of random bf16 that grow on demand (filled once per growth), so that timing
/// many dense shapes in a run does not refill gigabytes each time.
struct RandomBuffer {
  void* p = nullptr;
  size_t elems = 0;
  void* at_least(size_t n) {
    if (n <= elems) return p;
    cudaFree(p);
    p = nullptr;
    elems = 0;
    if (cudaMalloc(&p, n * 2) != cudaSuccess) {
      p = nullptr;
      (void)cudaGetLastError();  // not sticky: later launches must not see it
      return nullptr;
    }
    fill_random(p, n);
    elems = n;
    return p;
  }
};

/// Median of `reps` launches (each between two events) after `warmup` more, in milliseconds; 0 when
/// one fails. sync_each: the host waits for each launch before the next (the matmul ceiling, as
/// it has always been measured); else they run back to back.
template <class Launch>
double median_ms(int warmup, int reps, bool sync_each, Launch launch) {
  std::vector<cudaEvent_t> ev(2 * static_cast<size_t>(reps));
  for (auto& e : ev) cudaEventCreate(&e);
  bool ok = true;
  for (int i = 0; i < warmup; ++i) ok = ok && launch();
  for (int i = 0; i < reps; ++i) {
    cudaEventRecord(ev[2 * i]);
    ok = ok && launch();
    cudaEventRecord(ev[2 * i + 1]);
    if (sync_each) cudaEventSynchronize(ev[2 * i + 1]);
  }
  cudaEventSynchronize(ev.back());
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    float t = 0;
    cudaEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]);
    ms.push_back(t);
  }
  for (auto& e : ev) cudaEventDestroy(e);
  return ok && cudaGetLastError() == cudaSuccess ? median(ms) : 0.0;
}

}  // namespace

GpuCeilings measure_gpu_ceilings(int matmul_reps) {
  GpuCeilings c;
  c.copy_GBps = copy_bandwidth();
  const Cublas& blas = Cublas::get();
  if (!blas.ok()) {
    c.matmul_source = blas.why;
    return c;
  }
  const long n = 8192;
  void *a, *b, *d;
  cudaMalloc(&a, size_t(n) * n * 2);
  cudaMalloc(&b, size_t(n) * n * 2);
  cudaMalloc(&d, size_t(n) * n * 2);
  fill_random(a, size_t(n) * n);
  fill_random(b, size_t(n) * n);
  const double ms = median_ms(5, matmul_reps, true, [&] { return blas.run(n, n, n, a, b, d); });
  c.matmul_TFLOPs = ms > 0 ? 2.0 * n * n * double(n) / (ms * 1e-3) / 1e12 : 0.0;
  c.matmul_source = ms > 0 ? "cublas" : "cublas gemm failed";
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  return c;
}

double cublas_dense_us(long m, long n, long k, int reps) {
  const Cublas& blas = Cublas::get();
  if (!blas.ok() || m <= 0 || n <= 0 || k <= 0) return 0;
  static RandomBuffer a, b, c;
  void* pa = a.at_least(size_t(m) * k);
  void* pb = b.at_least(size_t(n) * k);
  void* pc = c.at_least(size_t(m) * n);
  if (!pa || !pb || !pc) return 0;
  return 1e3 * median_ms(3, reps, false, [&] { return blas.run(m, n, k, pa, pb, pc); });
}

}  // namespace moetune::bench
#endif  // MOETUNE_HAVE_CUDA
