// sm90_align_kernel.cuh: route/align on the device, no host synchronisation.
// Computes, from topk_ids [num_pairs] (pair p = token * top_k + j), the expert-sorted pair list
// padded per expert to kBlockM rows, the expert of every kBlockM-row block, and the number of
// valid blocks. Later launches size their grids from the host-side upper bound
// max_blocks = ceil(num_pairs / kBlockM) + min(E, num_pairs) and exit blocks past *num_blocks.
// One CTA of 1024 threads; E <= kMaxExperts. Pair order inside an expert follows shared-memory
// atomics and may vary between runs: every row's GEMM result is independent of its position, so
// the layer's output bits do not (tests assert equal digests across runs).
// Large M uses the three-launch multi-CTA variant at the end of this file (same outputs).
// Covered by tests/kernels/cuda/sm90_gather_test.cpp.
#pragma once

#include "sm90_common.cuh"

namespace moetune_dev {

constexpr int kMaxExperts = 1024;

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

template <int kBlockM>
__global__ void __launch_bounds__(1024) moe_align_kernel(AlignParams p) {
  __shared__ int counts[kMaxExperts];
  __shared__ int offsets[kMaxExperts + 1];
  const int tid = threadIdx.x;
  pdl_launch_dependents();
  pdl_wait();
  for (int e = tid; e < p.num_experts; e += blockDim.x) counts[e] = 0;
  __syncthreads();
  for (int i = tid; i < p.num_pairs; i += blockDim.x) {
    int e = p.topk_ids[i];
    if (e >= 0 && e < p.num_experts) atomicAdd(&counts[e], 1);
  }
  __syncthreads();
  // Exclusive scan of padded counts by warp 0 (E <= 1024: 32 elements per lane at most).
  if (tid < 32) {
    const int per_lane = (p.num_experts + 31) / 32;
    const int begin = tid * per_lane;
    int local = 0;
    for (int i = 0; i < per_lane; ++i) {
      int e = begin + i;
      if (e < p.num_experts) local += (counts[e] + kBlockM - 1) / kBlockM * kBlockM;
    }
    int incl = local;
    for (int d = 1; d < 32; d <<= 1) {
      int v = __shfl_up_sync(0xffffffffu, incl, d);
      if (tid >= d) incl += v;
    }
    int run = incl - local;
    for (int i = 0; i < per_lane; ++i) {
      int e = begin + i;
      if (e < p.num_experts) {
        offsets[e] = run;
        run += (counts[e] + kBlockM - 1) / kBlockM * kBlockM;
      }
    }
    if (tid == 31) offsets[p.num_experts] = incl;
  }
  __syncthreads();
  const int total_rows = offsets[p.num_experts];
  const int total_blocks = total_rows / kBlockM;
  if (tid == 0) *p.num_blocks = total_blocks;
  for (int b = tid; b < p.max_blocks; b += blockDim.x) {
    p.block_expert[b] = b < total_blocks ? expert_of_row(offsets, p.num_experts, b * kBlockM) : -1;
  }
  for (int r = tid; r < total_rows; r += blockDim.x) p.sorted_pairs[r] = -1;
  __syncthreads();
  for (int e = tid; e < p.num_experts; e += blockDim.x) counts[e] = 0;  // reuse as cursors
  __syncthreads();
  for (int i = tid; i < p.num_pairs; i += blockDim.x) {
    int e = p.topk_ids[i];
    if (e >= 0 && e < p.num_experts) {
      int pos = offsets[e] + atomicAdd(&counts[e], 1);
      p.sorted_pairs[pos] = i;
    }
  }
}

// ---- Multi-CTA align for large M (three launches, each fully parallel) ----
// count:   hist[c][e] = pairs of chunk c routed to expert e (one CTA per chunk of kAlignChunk
// pairs) scan:    one CTA: padded expert offsets, block_expert, num_blocks, sorted_pairs = -1, and
//          hist[c][e] := offset[e] + sum_{c' < c} hist[c'][e] (each chunk's first slot per expert)
// scatter: one CTA per chunk places its pairs from those bases (smem atomics inside the chunk).
constexpr int kAlignChunk = 4096;

struct AlignMultiParams {
  AlignParams base;
  int* hist;  // [num_chunks * num_experts]
  int num_chunks;
};

__global__ void __launch_bounds__(512) moe_align_count_kernel(AlignMultiParams p) {
  __shared__ int counts[kMaxExperts];
  pdl_launch_dependents();
  pdl_wait();
  for (int e = threadIdx.x; e < p.base.num_experts; e += blockDim.x) counts[e] = 0;
  __syncthreads();
  const int begin = blockIdx.x * kAlignChunk;
  const int end = min(begin + kAlignChunk, p.base.num_pairs);
  for (int i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const int e = p.base.topk_ids[i];
    if (e >= 0 && e < p.base.num_experts) atomicAdd(&counts[e], 1);
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
  const int E = p.base.num_experts;
  pdl_launch_dependents();
  pdl_wait();
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    int total = 0;
    for (int c = 0; c < p.num_chunks; ++c) total += p.hist[c * E + e];
    counts[e] = total;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int run = 0;
    for (int e = 0; e < E; ++e) {
      offsets[e] = run;
      run += (counts[e] + kBlockM - 1) / kBlockM * kBlockM;
    }
    offsets[E] = run;
  }
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    int run = offsets[e];
    for (int c = 0; c < p.num_chunks; ++c) {
      const int n = p.hist[c * E + e];
      p.hist[c * E + e] = run;
      run += n;
    }
  }
  const int total_rows = offsets[E];
  const int total_blocks = total_rows / kBlockM;
  if (threadIdx.x == 0) *p.base.num_blocks = total_blocks;
  for (int b = threadIdx.x; b < p.base.max_blocks; b += blockDim.x) {
    p.base.block_expert[b] = b < total_blocks ? expert_of_row(offsets, E, b * kBlockM) : -1;
  }
  for (int r = threadIdx.x; r < total_rows; r += blockDim.x) p.base.sorted_pairs[r] = -1;
}

__global__ void __launch_bounds__(512) moe_align_scatter_kernel(AlignMultiParams p) {
  __shared__ int cursor[kMaxExperts];
  const int E = p.base.num_experts;
  pdl_launch_dependents();
  pdl_wait();
  for (int e = threadIdx.x; e < E; e += blockDim.x) cursor[e] = p.hist[blockIdx.x * E + e];
  __syncthreads();
  const int begin = blockIdx.x * kAlignChunk;
  const int end = min(begin + kAlignChunk, p.base.num_pairs);
  for (int i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const int e = p.base.topk_ids[i];
    if (e >= 0 && e < E) p.base.sorted_pairs[atomicAdd(&cursor[e], 1)] = i;
  }
}

}  // namespace moetune_dev
