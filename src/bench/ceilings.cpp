// Host ceilings and the floor formula; see ceilings.hpp. The GPU ceilings are gpu_ceilings.cpp's
// (shared with the kernel benchmark, compiled only when CUDA is on).
#include "bench/ceilings.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#if MOETUNE_HAVE_CUDA
#include "bench/gpu_ceilings.hpp"
#endif

namespace moetune::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

unsigned thread_count() { return std::max(1u, std::thread::hardware_concurrency()); }

/// Runs fn(t) on `n` threads at once and returns the wall time in seconds.
template <class Fn>
double timed_parallel(unsigned n, Fn fn) {
  std::vector<std::thread> pool;
  auto const t0 = Clock::now();
  for (unsigned t = 0; t < n; ++t) pool.emplace_back(fn, t);
  for (auto& th : pool) th.join();
  return seconds_since(t0);
}

constexpr int kGemmN = 192;  // 3 x 147 KiB operands per thread: L2-resident, as a tile would be
constexpr int kGemmBlock = 48;

// NOTE: a plain i-k-j blocked loop, not the cpu backend's microkernel: the ceiling must not be
// tuned by the code it judges. The compiler vectorises the inner j loop.
void blocked_gemm(float const* a, float const* b, float* c) {
  std::fill(c, c + kGemmN * kGemmN, 0.0f);
  for (int i0 = 0; i0 < kGemmN; i0 += kGemmBlock) {
    for (int k0 = 0; k0 < kGemmN; k0 += kGemmBlock) {
      for (int i = i0; i < i0 + kGemmBlock; ++i) {
        for (int k = k0; k < k0 + kGemmBlock; ++k) {
          float const aik = a[i * kGemmN + k];
          float* crow = c + i * kGemmN;
          float const* brow = b + k * kGemmN;
          for (int j = 0; j < kGemmN; ++j) crow[j] += aik * brow[j];
        }
      }
    }
  }
}

}  // namespace

Ceilings measure_cpu_ceilings(int copy_mib) {
  Ceilings c;
  unsigned const n = thread_count();
  size_t const bytes = static_cast<size_t>(std::max(copy_mib, 1)) << 20;
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  size_t const slice = bytes / n;
  std::vector<double> copy_s;
  for (int rep = 0; rep < 7; ++rep) {
    copy_s.push_back(timed_parallel(n, [&](unsigned t) {
      std::memcpy(dst.data() + t * slice, src.data() + t * slice, slice);
    }));
  }
  c.copy_GBps = 2.0 * static_cast<double>(slice * n) / median_of(copy_s) / 1e9;
  c.copy_source = "memcpy " + std::to_string(copy_mib) + " MiB on " + std::to_string(n) +
                  " threads, read+write counted, median of 7";

  size_t const elems = size_t{kGemmN} * kGemmN;
  std::vector<std::vector<float>> a(n, std::vector<float>(elems, 0.5f));
  std::vector<std::vector<float>> b(n, std::vector<float>(elems, 0.25f));
  std::vector<std::vector<float>> out(n, std::vector<float>(elems));
  std::vector<double> gemm_s;
  for (int rep = 0; rep < 5; ++rep) {
    gemm_s.push_back(timed_parallel(
        n, [&](unsigned t) { blocked_gemm(a[t].data(), b[t].data(), out[t].data()); }));
  }
  double const flops = 2.0 * kGemmN * kGemmN * double(kGemmN) * n;
  c.matmul_GFLOPs = flops / median_of(gemm_s) / 1e9;
  c.matmul_source = "plain blocked fp32 loop " + std::to_string(kGemmN) + "^3 on " +
                    std::to_string(n) + " threads, median of 5";
  return c;
}

Ceilings measure_cuda_ceilings() {
  Ceilings c;
#if MOETUNE_HAVE_CUDA
  GpuCeilings const g = measure_gpu_ceilings();
  c.copy_GBps = g.copy_GBps;
  c.matmul_GFLOPs = g.matmul_TFLOPs * 1e3;
  c.copy_source = "cudaMemcpy device-to-device 4 GiB, read+write counted, median of 10";
  c.matmul_source =
      g.matmul_source == "cublas" ? "cublas bf16 8192^3, median of 200" : g.matmul_source;
  c.fp8_GFLOPs = g.fp8_TFLOPs * 1e3;
  c.fp8_source = g.fp8_source == "cublasLt" ? "cublasLt e4m3 8192^3, median of 200" : g.fp8_source;
#else
  c.copy_source = c.matmul_source = c.fp8_source = "not measured: built without CUDA";
#endif
  return c;
}

Floor floor_for(core::MoeProblem const& p, int64_t experts_hit, Ceilings const& c) {
  Floor f;
  double const b = core::dtype_bytes(p.dtype);
  double const k = static_cast<double>(p.hidden_size);
  double const m = static_cast<double>(p.num_tokens);
  f.bytes_min = static_cast<double>(experts_hit) * core::expert_weight_bytes(p) + 2.0 * m * k * b +
                8.0 * m * p.top_k;
  f.flops = core::flops(p);
  // An fp8 layer's compute floor is at the fp8 rate; without it, the bandwidth floor alone.
  double const rate = p.quant == core::Quant::kNone ? c.matmul_GFLOPs : c.fp8_GFLOPs;
  double const t_bw = c.copy_GBps > 0 ? f.bytes_min / (c.copy_GBps * 1e9) * 1e6 : 0;
  double const t_fl = rate > 0 ? f.flops / (rate * 1e9) * 1e6 : 0;
  f.floor_us = std::max(t_bw, t_fl);
  f.bandwidth_bound = t_bw >= t_fl;
  return f;
}

}  // namespace moetune::bench
