// GPU ceilings and cuBLAS's dense GEMM; see gpu_ceilings.hpp. The whole file is CUDA-only: a build
// without nvcc compiles it to nothing (ceilings.cpp then reports the ceilings as not measured).
#if defined(MOETUNE_HAVE_CUDA)
#include "bench/gpu_ceilings.hpp"

#include <cublasLt.h>
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

/// A library by its CUDA 13 soname, else its unversioned name; null when neither loads.
void* open_library(const char* versioned, const char* plain) {
  void* lib = dlopen(versioned, RTLD_NOW | RTLD_LOCAL);
  return lib ? lib : dlopen(plain, RTLD_NOW | RTLD_LOCAL);
}

/// f = the symbol `name` of lib (null when lib is null or lacks it); true when found.
template <class F>
bool sym(void* lib, const char* name, F& f) {
  f = lib ? reinterpret_cast<F>(dlsym(lib, name)) : nullptr;
  return f != nullptr;
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
      void* lib = open_library("libcublas.so.13", "libcublas.so");
      if (!sym(lib, "cublasCreate_v2", c.create) || !sym(lib, "cublasGemmEx", c.gemm)) {
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

/// cuBLASLt, loaded once with dlopen (libcublasLt.so.13 / .so), for the fp8 (e4m3) rate; `why`
/// says what is missing.
struct CublasLt {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  cublasLtHandle_t handle = nullptr;
  std::string why;

  static CublasLt& get() {
    static CublasLt c = [] {
      CublasLt c;
      void* lib = open_library("libcublasLt.so.13", "libcublasLt.so");
      const bool all = sym(lib, "cublasLtCreate", c.create) &&
                       sym(lib, "cublasLtMatmulDescCreate", c.desc_create) &&
                       sym(lib, "cublasLtMatmulDescSetAttribute", c.desc_set) &&
                       sym(lib, "cublasLtMatmulDescDestroy", c.desc_destroy) &&
                       sym(lib, "cublasLtMatrixLayoutCreate", c.layout_create) &&
                       sym(lib, "cublasLtMatrixLayoutDestroy", c.layout_destroy) &&
                       sym(lib, "cublasLtMatmulPreferenceCreate", c.pref_create) &&
                       sym(lib, "cublasLtMatmulPreferenceSetAttribute", c.pref_set) &&
                       sym(lib, "cublasLtMatmulPreferenceDestroy", c.pref_destroy) &&
                       sym(lib, "cublasLtMatmulAlgoGetHeuristic", c.heuristic) &&
                       sym(lib, "cublasLtMatmul", c.matmul);
      if (!all) {
        c.why = "cublasLt unavailable";
      } else if (c.create(&c.handle) != CUBLAS_STATUS_SUCCESS) {
        c.why = "cublasLtCreate failed";
      }
      return c;
    }();
    return c;
  }
  bool ok() const { return why.empty(); }
};

/// One e4m3 GEMM D [n x n] (bf16) = A [n x n] B^T, both read along k (cuBLASLt's fp8 layout: A
/// transposed, B not), fp32 accumulation, unit scales: its descriptors and the heuristic's first
/// algorithm with a 32 MiB workspace. `why` is empty when it is ready to run.
struct Fp8Gemm {
  CublasLt const& lt;
  long n;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t ab = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  void* ws = nullptr;
  size_t ws_bytes = size_t{32} << 20;
  std::string why;

  Fp8Gemm(CublasLt const& l, long size) : lt(l), n(size) { why = setup(); }
  ~Fp8Gemm() {
    if (desc) lt.desc_destroy(desc);
    if (ab) lt.layout_destroy(ab);
    if (d) lt.layout_destroy(d);
    cudaFree(ws);
  }
  std::string setup() {
    const cublasOperation_t trans_a = CUBLAS_OP_T;
    if (lt.desc_create(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS ||
        lt.desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof(trans_a)) !=
            CUBLAS_STATUS_SUCCESS)
      return "cublasLt fp8 descriptor failed";
    if (lt.layout_create(&ab, CUDA_R_8F_E4M3, n, n, n) != CUBLAS_STATUS_SUCCESS ||
        lt.layout_create(&d, CUDA_R_16BF, n, n, n) != CUBLAS_STATUS_SUCCESS)
      return "cublasLt fp8 layouts failed";
    if (cudaMalloc(&ws, ws_bytes) != cudaSuccess) return "cublasLt fp8 workspace failed";
    cublasLtMatmulPreference_t pref = nullptr;
    cublasLtMatmulHeuristicResult_t found{};
    int count = 0;
    const bool have = lt.pref_create(&pref) == CUBLAS_STATUS_SUCCESS &&
                      lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes,
                                  sizeof(ws_bytes)) == CUBLAS_STATUS_SUCCESS &&
                      lt.heuristic(lt.handle, desc, ab, ab, d, d, pref, 1, &found, &count) ==
                          CUBLAS_STATUS_SUCCESS &&
                      count > 0;
    if (pref) lt.pref_destroy(pref);
    if (!have) return "cublasLt has no fp8 algorithm here";
    algo = found.algo;
    return "";
  }
  bool run(const void* a, const void* b, void* out) const {
    const float alpha = 1.0f, beta = 0.0f;
    return lt.matmul(lt.handle, desc, &alpha, a, ab, b, ab, &beta, out, d, out, d, &algo, ws,
                     ws_bytes, nullptr) == CUBLAS_STATUS_SUCCESS;
  }
};

/// Random e4m3 bytes (sign, exponent field below 8, any mantissa: finite, magnitudes up to 2).
void fill_random_e4m3(void* p, size_t n) {
  std::vector<unsigned char> h(n);
  unsigned s = 54321;
  for (auto& v : h) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<unsigned char>(((s >> 16) & 0x3f) | ((s >> 8) & 0x80));
  }
  cudaMemcpy(p, h.data(), n, cudaMemcpyHostToDevice);
}

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

/// The fp8 rate: cuBLASLt's e4m3 GEMM at n^3, median of `reps` (each waited for) after 5
/// warm-ups; writes fp8_TFLOPs and fp8_source.
void measure_fp8_rate(GpuCeilings& c, int reps) {
  const CublasLt& lt = CublasLt::get();
  if (!lt.ok()) {
    c.fp8_source = lt.why;
    return;
  }
  const long n = 8192;
  void *a = nullptr, *b = nullptr, *d = nullptr;
  if (cudaMalloc(&a, size_t(n) * n) != cudaSuccess ||
      cudaMalloc(&b, size_t(n) * n) != cudaSuccess ||
      cudaMalloc(&d, size_t(n) * n * 2) != cudaSuccess) {
    (void)cudaGetLastError();
    c.fp8_source = "no memory for the fp8 GEMM";
  } else {
    fill_random_e4m3(a, size_t(n) * n);
    fill_random_e4m3(b, size_t(n) * n);
    const Fp8Gemm g(lt, n);
    const double ms = g.why.empty() ? median_ms(5, reps, true, [&] { return g.run(a, b, d); }) : 0;
    c.fp8_TFLOPs = ms > 0 ? 2.0 * n * n * double(n) / (ms * 1e-3) / 1e12 : 0.0;
    c.fp8_source = !g.why.empty() ? g.why : ms > 0 ? "cublasLt" : "cublasLt fp8 gemm failed";
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
}

/// The bf16 rate: cuBLAS's GEMM at n^3, median of `reps` (each waited for) after 5 warm-ups;
/// writes matmul_TFLOPs and matmul_source.
void measure_bf16_rate(GpuCeilings& c, int reps) {
  const Cublas& blas = Cublas::get();
  if (!blas.ok()) {
    c.matmul_source = blas.why;
    return;
  }
  const long n = 8192;
  void *a, *b, *d;
  cudaMalloc(&a, size_t(n) * n * 2);
  cudaMalloc(&b, size_t(n) * n * 2);
  cudaMalloc(&d, size_t(n) * n * 2);
  fill_random(a, size_t(n) * n);
  fill_random(b, size_t(n) * n);
  const double ms = median_ms(5, reps, true, [&] { return blas.run(n, n, n, a, b, d); });
  c.matmul_TFLOPs = ms > 0 ? 2.0 * n * n * double(n) / (ms * 1e-3) / 1e12 : 0.0;
  c.matmul_source = ms > 0 ? "cublas" : "cublas gemm failed";
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
}

}  // namespace

/// Copy, then bf16, then fp8: the bf16 rate is measured right after the copy, as it always was.
GpuCeilings measure_gpu_ceilings(int matmul_reps) {
  GpuCeilings c;
  c.copy_GBps = copy_bandwidth();
  measure_bf16_rate(c, matmul_reps);
  measure_fp8_rate(c, matmul_reps);
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
