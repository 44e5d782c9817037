// l2_stream_mix.cu: how fast can the H200 stream weights from DRAM while the same SMs re-read
// L2-resident token rows beside them, as a mid-M GEMM does? No math: each SM's producer thread
// loads k-tiles into a ring of shared-memory stages with bulk copies (the TMA unit), and one
// consumer warp releases each stage as soon as it lands.
//
// A k-tile is kW bytes of the weight stream (each byte read once, from DRAM) plus r x kW bytes
// of token rows (a 4 MiB region that every CTA walks, so after the first touch L2 serves them).
// r = 0 is a pure stream; a mid-M GEMM re-reads 0.8 (S2 M=2048's GEMM1) to 1.3 (S1 M=4096's) bytes
// per DRAM byte. Pair 2: clusters of two CTAs share their token rows by multicast, so L2 serves
// half of them. Printed per r and pair: time, the weight stream's GB/s, the GB/s into the SMs'
// shared memory and the GB/s L2 serves.
// First, the weights as a GEMM walks them (walk_kernel: each CTA its row blocks' k-tiles in order),
// as stored (TMA boxes of 128 rows x 128 bytes) or packed per k-tile (contiguous), at r = 0, 0.75,
// 1.33: stored 2-3% slower at r = 0, the same from 0.75 up; a consumer that holds each stage until
// the next lands, as the GEMMs' do, moved it 4% either way.
// Found on the H200: alone, 4.46 TB/s at r = 0, 4.11 at 1.0, 3.59 at 1.5, 3.03 at 2.0 (into the SMs
// ~9.1 TB/s at most); pairs 4.32 at 1.0, 4.23 at 1.5, 4.07 at 2.0. The GEMMs did not follow: fewer
// re-reads left their time as it was.
//
// Build: the CMake target moetune_l2_stream_mix, or
//   nvcc -O2 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Isrc -o l2_stream_mix
//   tools/l2/l2_stream_mix.cu
// Run: moetune_l2_stream_mix (about a second): the walk table, then the r x pair table.
#include <cuda.h>

#include <algorithm>
#include <vector>

#define L2_PROBE_NAME "l2_stream_mix"
#include "l2_probe.cuh"

namespace {

// A stage holds kW weight bytes and up to 2 kW token-row bytes (r <= 2).
template <unsigned kW, int kStages>
constexpr int smem_bytes() {
  return kStages * 3 * kW + 1024;
}

using moetune_dev::mbar_arrive;
using moetune_dev::mbar_arrive_cluster;
using moetune_dev::mbar_arrive_expect_tx;
using moetune_dev::mbar_wait;
using moetune_dev::smem_u32;

using l2_probe::bulk_load_pair;
using moetune_dev::bulk_copy_g2s;

// A ring of kStages shared-memory stages of kStage bytes with their full / empty mbarriers, as
// the GEMMs' producer and consumers use it (sm90_tma.cuh's primitives); `stage` and `phase` walk
// it. init(): by thread 0, then a CTA (or cluster) barrier by the caller.
template <int kStages, unsigned kStage>
struct Ring {
  unsigned long long* full;
  unsigned long long* empty;
  char* smem;  // 1024-byte aligned
  int stage = 0;
  int phase = 0;
  __device__ void init(int empty_count) {
    for (int s = 0; s < kStages; ++s) {
      moetune_dev::mbar_init(smem_u32(&full[s]), 1);
      moetune_dev::mbar_init(smem_u32(&empty[s]), empty_count);
    }
    moetune_dev::mbar_init_fence();
  }
  __device__ unsigned full_bar() const { return smem_u32(&full[stage]); }
  __device__ unsigned empty_bar(int s) const { return smem_u32(&empty[s]); }
  __device__ unsigned dst() const { return smem_u32(smem + stage * kStage); }
  __device__ unsigned first_word() const {
    return reinterpret_cast<volatile unsigned*>(smem + stage * kStage)[0];
  }
  __device__ void advance() {
    if (++stage == kStages) {
      stage = 0;
      phase ^= 1;
    }
  }
};

__device__ char* align_1024(char* p) {
  return reinterpret_cast<char*>((reinterpret_cast<unsigned long long>(p) + 1023) & ~1023ull);
}

// CTA c streams k-tiles c, c + grid, ... of the weights. Its token rows walk the region from an
// offset of its pair's, so every CTA walks the whole region and the two CTAs of a pair read the
// same rows. pair 2: the two CTAs of a cluster each load half of those rows and multicast them to
// both (as a cluster pair would share an expert block's token rows); a stage is refilled only
// after both CTAs released it.
template <int kPair, unsigned kW, int kStages>
__global__ void mix_kernel(const char* w, long long tiles, const char* a, long long a_region,
                           unsigned a_bytes, unsigned* sink) {
  extern __shared__ __align__(1024) char smem_raw[];
  __shared__ __align__(8) unsigned long long full[kStages], empty[kStages];
  Ring<kStages, 3 * kW> ring{full, empty, align_1024(smem_raw)};
  const int rank = kPair == 2 ? moetune_dev::cluster_cta_rank() : 0;
  if (threadIdx.x == 0) ring.init(kPair);
  if (kPair == 2) {
    moetune_dev::cluster_sync();
  } else {
    __syncthreads();
  }
  const long long pair_id = blockIdx.x / kPair;
  if (threadIdx.x == 0) {  // producer
    // The token rows' offset walks the region from a start of the pair's (no division per stage: a
    // 64-bit modulo there capped 8 KiB stages at ~2.9 TB/s).
    const long long span = a_region - a_bytes;
    long long off = a_bytes > 0 ? pair_id * 7919 * 128 % (span + 1) / 128 * 128 : 0;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
      mbar_wait(ring.empty_bar(ring.stage), ring.phase ^ 1);
      const unsigned fb = ring.full_bar();
      mbar_arrive_expect_tx(fb, static_cast<int>(kW + a_bytes));
      bulk_copy_g2s(ring.dst(), w + t * kW, kW, fb);
      if (a_bytes > 0) {
        if (kPair == 1) {
          bulk_copy_g2s(ring.dst() + kW, a + off, a_bytes, fb);
        } else {
          const unsigned half = a_bytes / 2;  // a multiple of 64 bytes (a_bytes of 128)
          bulk_load_pair(ring.dst() + kW + rank * half, a + off + rank * half, half, fb);
        }
        off += a_bytes;
        if (off > span) off = 0;
      }
      ring.advance();
    }
  } else if (threadIdx.x == 32) {  // consumer: releases each stage once it landed
    unsigned acc = 0;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
      mbar_wait(ring.full_bar(), ring.phase);
      acc += ring.first_word();
      mbar_arrive(ring.empty_bar(ring.stage));
      // The peer's multicast writes here too: it waits for this release. NOTE: released at CTA
      // scope as the GEMMs do (mbar_arrive_cluster); with .release.cluster the pairs streamed at
      // 2.5 TB/s even with no shared rows.
      if (kPair == 2) mbar_arrive_cluster(ring.empty_bar(ring.stage), rank ^ 1);
      ring.advance();
    }
    if (acc == 0xdeadbeef) sink[0] = acc;
  }
  if (kPair == 2) moetune_dev::cluster_sync();  // neither CTA leaves while its peer may write
}

// The weights as a GEMM walks them: CTA c takes row blocks of 128 rows c, c + grid, ... of a
// [rows, k] bf16 matrix and, for each, its k-tiles in order (64 columns: 16 KiB). kMode 0: the
// matrix as stored (row-major), each k-tile a TMA box of 128 rows x 128 bytes, 128-byte swizzle, as
// the GEMMs load it (moetune_dev::tma_load_2d); kMode 1: the same k-tiles packed, each one
// contiguous 16 KiB (a weight layout prepacked per tile), by bulk copy. Token rows beside them as
// in mix_kernel (one CTA, no pairs). kHold 1: the consumer releases a stage only once the next one
// has landed, as a GEMM consumer does (it releases k-tile kt - 1 after issuing kt's wgmma and
// waiting for kt - 1's to retire), so one stage fewer is in flight while it waits for data;
// kHold 0: at once.
template <int kMode, int kHold>
__global__ void walk_kernel(const __grid_constant__ CUtensorMap map, const char* w, int row_blocks,
                            int k_tiles, const char* a, long long a_region, unsigned a_bytes,
                            unsigned* sink) {
  constexpr unsigned kW = 16384;
  constexpr int kStages = 4;
  extern __shared__ __align__(1024) char smem_raw[];
  __shared__ __align__(8) unsigned long long full[kStages], empty[kStages];
  Ring<kStages, 3 * kW> ring{full, empty, align_1024(smem_raw)};
  if (threadIdx.x == 0) ring.init(1);
  __syncthreads();
  const long long tiles_mine = static_cast<long long>((row_blocks - static_cast<int>(blockIdx.x) +
                                                       static_cast<int>(gridDim.x) - 1) /
                                                      static_cast<int>(gridDim.x)) *
                               k_tiles;
  if (threadIdx.x == 0) {  // producer
    const long long span = a_region - a_bytes;
    long long off = a_bytes > 0 ? blockIdx.x * 7919ll * 128 % (span + 1) / 128 * 128 : 0;
    for (int rb = blockIdx.x; rb < row_blocks; rb += gridDim.x) {
      for (int kt = 0; kt < k_tiles; ++kt) {
        mbar_wait(ring.empty_bar(ring.stage), ring.phase ^ 1);
        const unsigned fb = ring.full_bar();
        mbar_arrive_expect_tx(fb, static_cast<int>(kW + a_bytes));
        if (kMode == 0) {
          moetune_dev::tma_load_2d(ring.dst(),
                                   reinterpret_cast<const moetune_dev::TmaDescriptor*>(&map), fb,
                                   kt * 64, rb * 128);
        } else {
          bulk_copy_g2s(ring.dst(), w + (static_cast<long long>(rb) * k_tiles + kt) * kW, kW, fb);
        }
        if (a_bytes > 0) {
          bulk_copy_g2s(ring.dst() + kW, a + off, a_bytes, fb);
          off += a_bytes;
          if (off > span) off = 0;
        }
        ring.advance();
      }
    }
  } else if (threadIdx.x == 32) {  // consumer
    unsigned acc = 0;
    int prev = -1;
    for (long long i = 0; i < tiles_mine; ++i) {
      mbar_wait(ring.full_bar(), ring.phase);
      acc += ring.first_word();
      const int release = kHold ? prev : ring.stage;
      if (release >= 0) mbar_arrive(ring.empty_bar(release));
      prev = ring.stage;
      ring.advance();
    }
    if (acc == 0xdeadbeef) sink[0] = acc;
  }
}

}  // namespace

/// The median of 5 timings of launch() in seconds, each after a memset of `flush` that takes the
/// weights out of L2.
template <typename Launch>
double median_of_5(void* flush, size_t flush_bytes, Launch launch) {
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  std::vector<float> times;
  for (int i = 0; i < 5; ++i) {
    CHECK(cudaMemset(flush, i, flush_bytes));
    CHECK(cudaEventRecord(e0));
    launch();
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    times.push_back(ms);
  }
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2] * 1e-3;
}

/// Launches one config (clusters of kPair CTAs); returns the median of 5 timings in seconds, each
/// after a 256 MiB memset that takes the weights out of L2.
template <int kPair, unsigned kW, int kStages>
double time_config(int grid, const char* w, long long w_bytes, const char* a, long long a_region,
                   double r, unsigned* sink, void* flush, size_t flush_bytes) {
  auto* f = mix_kernel<kPair, kW, kStages>;
  CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             smem_bytes<kW, kStages>()));
  const unsigned a_bytes = static_cast<unsigned>(r * kW) / 128 * 128;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(64);
  cfg.dynamicSmemBytes = smem_bytes<kW, kStages>();
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = kPair;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return median_of_5(flush, flush_bytes, [&] {
    CHECK(cudaLaunchKernelEx(&cfg, f, w, w_bytes / kW, a, a_region, a_bytes, sink));
  });
}

using EncodeTiledFn = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                   const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                   const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                   CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

/// walk_kernel over a [rows, k] bf16 matrix in `w` (2 GiB at most); median of 5 in seconds.
template <int kMode, int kHold = 0>
double time_walk(int grid, const char* w, int k, const char* a, long long a_region, double r,
                 unsigned* sink, void* flush, size_t flush_bytes, long long* bytes) {
  const long long rows = (2ll << 30) / (2ll * k) / 128 * 128;
  *bytes = rows * k * 2;
  CUtensorMap map{};
  if (kMode == 0) {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault,
                                           &q));
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(k) * 2};
    const cuuint32_t box[2] = {64, 128};
    const cuuint32_t elem[2] = {1, 1};
    if (reinterpret_cast<EncodeTiledFn>(f)(
            &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<char*>(w), dims, strides, box,
            elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
            CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
      std::fprintf(stderr, "l2_stream_mix: cuTensorMapEncodeTiled failed\n");
      std::exit(3);
    }
  }
  auto* f = walk_kernel<kMode, kHold>;
  const int smem = 4 * 3 * 16384 + 1024;
  CHECK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const unsigned a_bytes = static_cast<unsigned>(r * 16384) / 128 * 128;
  return median_of_5(flush, flush_bytes, [&] {
    f<<<grid, 64, smem>>>(map, w, static_cast<int>(rows / 128), k / 64, a, a_region, a_bytes, sink);
    CHECK(cudaGetLastError());
  });
}

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const long long w_bytes = 2ll << 30;   // 2 GiB of weights, each byte read once
  const long long a_region = 4ll << 20;  // stays in L2 beside the stream
  const size_t flush_bytes = 256ull << 20;
  char *w = nullptr, *a = nullptr, *flush = nullptr;
  unsigned* sink = nullptr;
  CHECK(cudaMalloc(&w, w_bytes));
  CHECK(cudaMalloc(&a, a_region));
  CHECK(cudaMalloc(&flush, flush_bytes));
  CHECK(cudaMalloc(&sink, 16));
  CHECK(cudaMemset(w, 1, w_bytes));
  CHECK(cudaMemset(a, 2, a_region));
  // Pairs: as many clusters of two CTAs as fit at once (a GPC's SMs pair up): one CTA per SM.
  const int pair_grid = sms / 2 * 2;
  const double ratios[] = {0.0, 0.5, 1.0, 1.5, 2.0};
  std::printf("%6s %5s %7s %6s %10s %10s %12s %12s\n", "r", "pair", "w_KiB", "stages", "time_us",
              "dram_GBps", "into_sm_GBps", "l2_read_GBps");
  auto report = [&](double r, int pair, unsigned kw, int stages, double s) {
    const double tiles = static_cast<double>(w_bytes / kw);
    const double a_bytes = static_cast<unsigned>(r * kw) / 128 * 128;
    std::printf("%6.2f %5d %7u %6d %10.1f %10.0f %12.0f %12.0f\n", r, pair, kw / 1024, stages,
                s * 1e6, w_bytes / s / 1e9, (w_bytes + tiles * a_bytes) / s / 1e9,
                (w_bytes + tiles * a_bytes / pair) / s / 1e9);
  };
  // The weights in a GEMM's walk at S1's K (2688): as stored (TMA boxes) or packed per k-tile
  // (bulk copies), each stage released at once or held until the next landed.
  std::printf("%6s %-8s %5s %5s %10s %10s\n", "r", "layout", "k", "hold", "time_us", "dram_GBps");
  for (int rep = 0; rep < 2; ++rep) {
    for (double r : {0.0, 0.75, 1.33}) {
      const int k = 2688;
      long long bytes = 0;
      auto row = [&](const char* layout, int hold, double t) {
        std::printf("%6.2f %-8s %5d %5d %10.1f %10.0f\n", r, layout, k, hold, t * 1e6,
                    bytes / t / 1e9);
      };
      row("stored", 0,
          time_walk<0, 0>(sms, w, k, a, a_region, r, sink, flush, flush_bytes, &bytes));
      row("stored", 1,
          time_walk<0, 1>(sms, w, k, a, a_region, r, sink, flush, flush_bytes, &bytes));
      row("packed", 0,
          time_walk<1, 0>(sms, w, k, a, a_region, r, sink, flush, flush_bytes, &bytes));
    }
  }
  for (int rep = 0; rep < 2; ++rep) {
    std::printf("pass %d\n", rep + 1);
    for (double r : ratios) {
      report(r, 1, 16384, 4,
             time_config<1, 16384, 4>(sms, w, w_bytes, a, a_region, r, sink, flush, flush_bytes));
      report(r, 1, 8192, 8,
             time_config<1, 8192, 8>(sms, w, w_bytes, a, a_region, r, sink, flush, flush_bytes));
      report(r, 2, 16384, 4,
             time_config<2, 16384, 4>(pair_grid, w, w_bytes, a, a_region, r, sink, flush,
                                      flush_bytes));
      report(
          r, 2, 8192, 8,
          time_config<2, 8192, 8>(pair_grid, w, w_bytes, a, a_region, r, sink, flush, flush_bytes));
    }
  }
  return 0;
}
