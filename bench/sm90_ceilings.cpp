#include "sm90_ceilings.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <vector>

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

}  // namespace

Ceilings measure_ceilings(int matmul_reps) {
  Ceilings c;
  c.copy_GBps = copy_bandwidth();
  void* lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libcublas.so", RTLD_NOW | RTLD_LOCAL);
  auto create = lib ? reinterpret_cast<CreateFn>(dlsym(lib, "cublasCreate_v2")) : nullptr;
  auto gemm = lib ? reinterpret_cast<GemmExFn>(dlsym(lib, "cublasGemmEx")) : nullptr;
  if (!create || !gemm) {
    c.matmul_source = "cublas unavailable";
    return c;
  }
  cublasHandle_t h;
  if (create(&h) != CUBLAS_STATUS_SUCCESS) {
    c.matmul_source = "cublasCreate failed";
    return c;
  }
  const int n = 8192;
  void *a, *b, *d;
  cudaMalloc(&a, size_t(n) * n * 2);
  cudaMalloc(&b, size_t(n) * n * 2);
  cudaMalloc(&d, size_t(n) * n * 2);
  fill_random(a, size_t(n) * n);
  fill_random(b, size_t(n) * n);
  const float alpha = 1.0f, beta = 0.0f;
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<double> ms;
  for (int i = 0; i < matmul_reps + 5; ++i) {
    cudaEventRecord(e0);
    gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha, a, CUDA_R_16BF, n, b, CUDA_R_16BF, n, &beta,
         d, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float t = 0;
    cudaEventElapsedTime(&t, e0, e1);
    if (i >= 5) ms.push_back(t);
  }
  c.matmul_TFLOPs = 2.0 * n * n * double(n) / (median(ms) * 1e-3) / 1e12;
  c.matmul_source = "cublas";
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  return c;
}
