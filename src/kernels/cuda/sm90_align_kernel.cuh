// sm90_align_kernel.cuh: route/align on the device, no host synchronisation.
// Computes, from topk_ids [num_pairs] (pair p = token * top_k + j), the expert-sorted pair list
// padded per expert to kBlockM rows, the expert of every kBlockM-row block, and the number of
// valid blocks. Later launches size their grids from the host-side upper bound
// max_blocks = ceil(num_pairs / kBlockM) + min(E, num_pairs) and exit blocks past *num_blocks.
// One CTA of 1024 threads up to kAlignSlab pairs (more: slab by slab); E <= kMaxExperts. Pair
// order inside an expert follows shared-memory atomics and may vary between runs: every row's
// GEMM result is independent of its position, so the layer's output bits do not (tests assert
// equal digests across runs).
// Latency, not bandwidth, is the cost here (S2 M=1024: 8192 pairs, 32 KB): every thread loads all
// of its slab's ids before the first atomic (a load after an atomic waits for the one before it,
// and the first version's 8 dependent loads per pass cost ~10 us). NOTE: warp-aggregated atomics
// (match.any, one atomic per distinct expert of a warp) made align 1.5-2.4x slower on the H200
// (S2 M=2048 19 -> 46 us, M=4 5.0 -> 8.6 us; 375e5fc's device run): plain shared atomics.
// Above 4096 pairs the three-launch multi-CTA variant at the end of this file (same outputs)
// spreads the shared atomics, the cost left (S2 M=1024, 8192 pairs: 21 us in one CTA under ncu for
// 23k instructions), over one CTA per 2048 pairs. Covered by
// tests/kernels/cuda/sm90_gather_test.cpp.
#pragma once

#include "sm90_common.cuh"

namespace moetune_dev {

constexpr int kMaxExperts = 1024;
constexpr int kAlignIdsPerThread = 16;                 // ids held in registers per pass
constexpr int kAlignSlab = 1024 * kAlignIdsPerThread;  // pairs per pass of the 1-CTA align

struct AlignParams {
  const int* topk_ids;  // [num_pairs]
  int* sorted_pairs;    // [max_blocks * block_m]: pair id, or -1 for padding
  int* block_expert;    // [max_blocks]: expert of each block, -1 past the end
  int* num_blocks;      // [1]
  int num_pairs;
  int num_experts;
  int max_blocks;
};

/// The expert owning padded row `row`: the last expert whose offset <= row (empty experts share
/// their successor's offset, so the last one wins). offsets: [num_experts + 1], ascending.
MOETUNE_DEVICE int expert_of_row(const int* offsets, int num_experts, int row) {
  int lo = 0, hi = num_experts - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (offsets[mid] <= row)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/// Loads ids [first + j * stride] for j < n (n <= kN, the same for the whole CTA) into registers,
/// all loads issued before any is used; -1 past `end` or outside [0, num_experts) (such pairs are
/// dropped, as before) and for j >= n. NOTE: a fixed kN = 16 slots with the unused ones only
/// predicated off made the 1-CTA align ~1.8 us slower at tiny M on the H200 (one SM issues every
/// warp's dead slots): callers stop at n.
template <int kN>
MOETUNE_DEVICE void load_ids(const int* ids, int first, int stride, int end, int num_experts, int n,
                             int (&out)[kN]) {
#pragma unroll
  for (int j = 0; j < kN; ++j) {
    const int i = first + j * stride;
    out[j] = j < n && i < end ? __ldg(ids + i) : -1;
  }
#pragma unroll
  for (int j = 0; j < kN; ++j) {
    if (out[j] >= num_experts) out[j] = -1;
  }
}

/// sorted_pairs = -1 on the padding rows of each expert's last block only (the scatter writes
/// every other row): offsets [E + 1], counts [E] (pairs per expert). One warp per expert, so the
/// stores coalesce. NOTE: one thread per expert (strided stores) made the 1-CTA align at S2
/// M=1024 14.5 -> 22 us on the H200 (32a8e28's run).
MOETUNE_DEVICE void fill_padding(int* sorted_pairs, const int* offsets, const int* counts,
                                 int num_experts) {
  const int lane = threadIdx.x & 31;
  for (int e = threadIdx.x >> 5; e < num_experts; e += blockDim.x >> 5) {
    for (int r = offsets[e] + counts[e] + lane; r < offsets[e + 1]; r += 32) sorted_pairs[r] = -1;
  }
}

/// offsets[e] = sum over e' < e of counts[e'] rounded up to kBlockM, offsets[E] = total, by warp 0
/// (E <= 1024: 32 experts per lane at most). The caller syncs before and after.
template <int kBlockM>
MOETUNE_DEVICE void padded_offsets_warp0(const int* counts, int* offsets, int num_experts) {
  const int tid = threadIdx.x;
  if (tid >= 32) return;
  const int per_lane = (num_experts + 31) / 32;
  const int begin = tid * per_lane;
  int local = 0;
  for (int i = 0; i < per_lane; ++i) {
    const int e = begin + i;
    if (e < num_experts) local += (counts[e] + kBlockM - 1) / kBlockM * kBlockM;
  }
  int incl = local;
  for (int d = 1; d < 32; d <<= 1) {
    const int v = __shfl_up_sync(0xffffffffu, incl, d);
    if (tid >= d) incl += v;
  }
  int run = incl - local;
  for (int i = 0; i < per_lane; ++i) {
    const int e = begin + i;
    if (e < num_experts) {
      offsets[e] = run;
      run += (counts[e] + kBlockM - 1) / kBlockM * kBlockM;
    }
  }
  if (tid == 31) offsets[num_experts] = incl;
}

template <int kBlockM>
__global__ void __launch_bounds__(1024) moe_align_kernel(AlignParams p) {
  __shared__ int counts[kMaxExperts];
  __shared__ int offsets[kMaxExperts + 1];
  const int tid = threadIdx.x;
  pdl_launch_dependents();
  pdl_wait();
  for (int e = tid; e < p.num_experts; e += blockDim.x) counts[e] = 0;
  __syncthreads();
  int ids[kAlignIdsPerThread];
  for (int base = 0; base < p.num_pairs; base += kAlignSlab) {
    const int n = min(kAlignIdsPerThread, (p.num_pairs - base + 1023) / 1024);
    load_ids(p.topk_ids, base + tid, 1024, p.num_pairs, p.num_experts, n, ids);
#pragma unroll
    for (int j = 0; j < kAlignIdsPerThread; ++j) {
      if (j >= n) break;
      if (ids[j] >= 0) atomicAdd(&counts[ids[j]], 1);
    }
  }
  __syncthreads();
  padded_offsets_warp0<kBlockM>(counts, offsets, p.num_experts);
  __syncthreads();
  const int total_rows = offsets[p.num_experts];
  const int total_blocks = total_rows / kBlockM;
  if (tid == 0) *p.num_blocks = total_blocks;
  for (int b = tid; b < p.max_blocks; b += blockDim.x) {
    p.block_expert[b] = b < total_blocks ? expert_of_row(offsets, p.num_experts, b * kBlockM) : -1;
  }
  fill_padding(p.sorted_pairs, offsets, counts, p.num_experts);
  for (int e = tid; e < p.num_experts; e += blockDim.x) counts[e] = 0;  // reuse as cursors
  __syncthreads();
  for (int base = 0; base < p.num_pairs; base += kAlignSlab) {
    const int n = min(kAlignIdsPerThread, (p.num_pairs - base + 1023) / 1024);
    load_ids(p.topk_ids, base + tid, 1024, p.num_pairs, p.num_experts, n, ids);
#pragma unroll
    for (int j = 0; j < kAlignIdsPerThread; ++j) {
      if (j >= n) break;
      if (ids[j] >= 0) {
        p.sorted_pairs[offsets[ids[j]] + atomicAdd(&counts[ids[j]], 1)] = base + tid + j * 1024;
      }
    }
  }
}

// ---- Multi-CTA align for large M (three launches, each fully parallel) ----
// count:   hist[c][e] = pairs of chunk c routed to expert e (one CTA per chunk of kAlignChunk
//          pairs)
// scan:    one CTA: padded expert offsets, block_expert, num_blocks, -1 on padding rows, and
//          hist[c][e] := offset[e] + sum_{c' < c} hist[c'][e] (each chunk's first slot per expert)
//          (hist is staged in shared memory where it fits, so the per-expert walks over chunks
//          read shared memory, not a chain of dependent global loads)
// scatter: one CTA per chunk places its pairs from those bases (smem atomics inside the chunk).
constexpr int kAlignChunkThreads = 256;
constexpr int kAlignChunkIds = 8;  // per thread
constexpr int kAlignChunk = kAlignChunkThreads * kAlignChunkIds;
constexpr int kAlignScanSmemInts = 9 * 1024;  // 36 KB of staged hist (+ 8 KB: under 48 KB static)

struct AlignMultiParams {
  AlignParams base;
  int* hist;  // [num_chunks * num_experts]
  int num_chunks;
};

__global__ void __launch_bounds__(kAlignChunkThreads) moe_align_count_kernel(AlignMultiParams p) {
  __shared__ int counts[kMaxExperts];
  pdl_launch_dependents();
  pdl_wait();
  for (int e = threadIdx.x; e < p.base.num_experts; e += blockDim.x) counts[e] = 0;
  int ids[kAlignChunkIds];
  load_ids(p.base.topk_ids, blockIdx.x * kAlignChunk + threadIdx.x, kAlignChunkThreads,
           p.base.num_pairs, p.base.num_experts, kAlignChunkIds, ids);
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kAlignChunkIds; ++j) {
    if (ids[j] >= 0) atomicAdd(&counts[ids[j]], 1);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < p.base.num_experts; e += blockDim.x) {
    p.hist[blockIdx.x * p.base.num_experts + e] = counts[e];
  }
}

template <int kBlockM>
__global__ void __launch_bounds__(1024) moe_align_scan_kernel(AlignMultiParams p) {
  __shared__ int counts[kMaxExperts];
  __shared__ int offsets[kMaxExperts + 1];
  __shared__ int staged[kAlignScanSmemInts];
  const int E = p.base.num_experts;
  const int n = p.num_chunks * E;
  pdl_launch_dependents();
  pdl_wait();
  // Where it fits (S2 at M = 16384: 64 chunks x 128 experts), hist is walked in shared memory.
  int* hist = n <= kAlignScanSmemInts ? staged : p.hist;
  if (hist == staged) {
    for (int i = threadIdx.x; i < n; i += blockDim.x) staged[i] = p.hist[i];
    __syncthreads();
  }
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    int total = 0;
    for (int c = 0; c < p.num_chunks; ++c) total += hist[c * E + e];
    counts[e] = total;
  }
  __syncthreads();
  padded_offsets_warp0<kBlockM>(counts, offsets, E);
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    int run = offsets[e];
    for (int c = 0; c < p.num_chunks; ++c) {
      const int cnt = hist[c * E + e];
      p.hist[c * E + e] = run;
      run += cnt;
    }
  }
  const int total_rows = offsets[E];
  const int total_blocks = total_rows / kBlockM;
  if (threadIdx.x == 0) *p.base.num_blocks = total_blocks;
  for (int b = threadIdx.x; b < p.base.max_blocks; b += blockDim.x) {
    p.base.block_expert[b] = b < total_blocks ? expert_of_row(offsets, E, b * kBlockM) : -1;
  }
  fill_padding(p.base.sorted_pairs, offsets, counts, E);
}

__global__ void __launch_bounds__(kAlignChunkThreads) moe_align_scatter_kernel(AlignMultiParams p) {
  __shared__ int cursor[kMaxExperts];
  const int E = p.base.num_experts;
  pdl_launch_dependents();
  pdl_wait();
  const int first = blockIdx.x * kAlignChunk + threadIdx.x;
  int ids[kAlignChunkIds];
  load_ids(p.base.topk_ids, first, kAlignChunkThreads, p.base.num_pairs, E, kAlignChunkIds, ids);
  for (int e = threadIdx.x; e < E; e += blockDim.x) cursor[e] = p.hist[blockIdx.x * E + e];
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kAlignChunkIds; ++j) {
    if (ids[j] >= 0)
      p.base.sorted_pairs[atomicAdd(&cursor[ids[j]], 1)] = first + j * kAlignChunkThreads;
  }
}

}  // namespace moetune_dev
