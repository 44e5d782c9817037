// sm90_align_kernel.cuh: route/align on the device, no host synchronisation.
// Computes, from topk_ids [num_pairs] (pair p = token * top_k + j), the expert-sorted pair list
// padded per expert to kBlockM rows (and each listed pair's routing weight, in the same order),
// the expert of every kBlockM-row block, and the number of valid blocks; with kSubM < kBlockM (a
// GEMM1 that walks the blocks in kSubM-row tiles) also the first row of every kSubM-row sub-block
// that holds pairs, in order, and their count (sub-blocks of padding are left out, so GEMM1's
// persistent tiles stay balanced). Later launches size their grids from the host-side upper bound
// max_blocks = ceil(num_pairs / kBlockM) + min(E, num_pairs) and exit blocks past *num_blocks.
// Up to the host's kSingleCtaAlignPairs (2048): one CTA of 1024 threads, E <= kMaxExperts, each
// thread holding up to kAlignRegIds pairs in registers (histogram, one warp's scans, stores: three
// barriers); more pairs with the lever align_multi_cta off: the older phases (ids read twice).
// Above: two launches (end of this file, same outputs) with one CTA per chunk of 512 to 2048 pairs
// (the host's align_chunks), because the cost is shared-memory atomics that one CTA does in turn
// (ncu on the H200: the 1-CTA align at S2 M=1024, 8192 pairs, ran 21 us for 23k instructions; the
// three launches of then 4.0 + 4.8 + 4.5 us).
// Pair order inside an expert follows shared-memory atomics and may vary between runs: every
// row's GEMM result is independent of its position, so the layer's output bits do not (tests
// assert equal digests across runs).
// NOTE: the register path took the align stage from 6.5 to 5.4 us at S1 M=4, 6.8 to 5.7 at S2 M=16,
// 7.1 to 5.6 at S3 M=512 (1024 pairs), 8.4 to 8.0 at S1 M=256 (1536), but 8.7 to 9.1 at S2 M=256
// (2048 pairs: the pairs' scattered stores; the layer there 306.4 vs 306.6 us). Same bits in the
// layer.
// NOTE, tried on the H200 and left out of the 1-CTA kernel: ids loaded into registers before the
// first atomic (16 per thread: ~2 us slower at tiny M, S1 M=4 7.0 vs 5.0 us, and no faster at 4096
// pairs; the register path above holds 2 per thread and also keeps each pair's slot, which drops a
// pass); warp-aggregated atomics with match.any (1.5-2.4x slower: S2 M=2048 19 -> 46 us); -1
// written by one thread per expert (strided stores: S2 M=1024 14.5 -> 22 us). The multi-CTA kernels
// keep their ids in registers (8 per thread) and fill padding one warp per expert.
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
  int* sub_row0;  // [max_blocks * kBlockM / kSubM]: first row of each sub-block with pairs, -1 past
  int* num_sub;   // [1]; both written only when kSubM < kBlockM
  const float* topk_weights;  // [num_pairs]
  float* sorted_weights;      // [max_blocks * block_m]: topk_weights of each row's pair (GEMM2's
                              // epilogue scale); padding rows are not written
  int* sched;  // [4]: the tile counters of the swap-AB walk (sm90_swap_kernel.cuh), zeroed here
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

/// Loads ids [first + j * stride] for j < n (<= kN) into registers, all loads issued before any
/// is used; -1 for j >= n, past `end` or outside [0, num_experts) (such pairs are dropped, as in
/// the 1-CTA kernel).
template <int kN>
MOETUNE_DEVICE void load_ids(const int* ids, int first, int stride, int n, int end, int num_experts,
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

/// sorted_pairs = -1 on the padding rows of each expert's last block only (the scatter writes every
/// other row): offsets [E + 1], counts [E] (pairs per expert). One warp per expert, so the stores
/// coalesce. NOTE: one thread per expert (strided stores) made the align at S2 M=1024 14.5 -> 22 us
/// on the H200. Warps first_warp, first_warp + warp_stride, ... take the experts in turn (one CTA:
/// its own warps; the multi-CTA place kernel: the grid's).
MOETUNE_DEVICE void fill_padding(int* sorted_pairs, const int* offsets, const int* counts,
                                 int num_experts, int first_warp, int warp_stride) {
  const int lane = threadIdx.x & 31;
  for (int e = first_warp; e < num_experts; e += warp_stride) {
    for (int r = offsets[e] + counts[e] + lane; r < offsets[e + 1]; r += 32) sorted_pairs[r] = -1;
  }
}

/// offsets[e] = sum over e' < e of counts[e'] rounded up to kBlockM, offsets[E] = total, by warp 0
/// (E <= 1024: 32 experts per lane at most); with kSubM < kBlockM the same padded to kSubM into
/// sub_offsets in the same pass (the one-CTA align's two scans; sub_offsets unused otherwise).
/// The caller syncs before and after.
template <int kBlockM, int kSubM>
MOETUNE_DEVICE void align_offsets_warp0(const int* counts, int* offsets, int* sub_offsets,
                                        int num_experts) {
  constexpr bool kSub = kSubM < kBlockM;
  const int tid = threadIdx.x;
  if (tid >= 32) return;
  const int per_lane = (num_experts + 31) / 32;
  const int begin = tid * per_lane;
  int local = 0, local_sub = 0;
  for (int i = 0; i < per_lane; ++i) {
    const int e = begin + i;
    if (e < num_experts) {
      local += (counts[e] + kBlockM - 1) / kBlockM * kBlockM;
      if constexpr (kSub) local_sub += (counts[e] + kSubM - 1) / kSubM * kSubM;
    }
  }
  int incl = local, incl_sub = local_sub;
  for (int d = 1; d < 32; d <<= 1) {
    const int v = __shfl_up_sync(0xffffffffu, incl, d);
    if (tid >= d) incl += v;
    if constexpr (kSub) {
      const int v_sub = __shfl_up_sync(0xffffffffu, incl_sub, d);
      if (tid >= d) incl_sub += v_sub;
    }
  }
  int run = incl - local, run_sub = incl_sub - local_sub;
  for (int i = 0; i < per_lane; ++i) {
    const int e = begin + i;
    if (e < num_experts) {
      offsets[e] = run;
      run += (counts[e] + kBlockM - 1) / kBlockM * kBlockM;
      if constexpr (kSub) {
        sub_offsets[e] = run_sub;
        run_sub += (counts[e] + kSubM - 1) / kSubM * kSubM;
      }
    }
  }
  if (tid == 31) {
    offsets[num_experts] = incl;
    if constexpr (kSub) sub_offsets[num_experts] = incl_sub;
  }
}

/// The scan above alone: offsets padded to kBlockM.
template <int kBlockM>
MOETUNE_DEVICE void padded_offsets_warp0(const int* counts, int* offsets, int num_experts) {
  align_offsets_warp0<kBlockM, kBlockM>(counts, offsets, nullptr, num_experts);
}

/// kSubM < kBlockM: sub_row0 / num_sub of the sub-blocks that hold pairs, from sub_offsets [E + 1]
/// (the experts' offsets padded to kSubM) and offsets (padded to kBlockM). Entries first,
/// first + stride, ... are written here (one CTA: threadIdx.x and blockDim.x; the place kernel:
/// the grid's thread index and size), num_sub where first == 0.
template <int kBlockM, int kSubM>
MOETUNE_DEVICE void write_sub_rows(AlignParams const& p, const int* offsets, const int* sub_offsets,
                                   int first, int stride) {
  if constexpr (kSubM < kBlockM) {
    const int num_sub = sub_offsets[p.num_experts] / kSubM;
    if (first == 0) *p.num_sub = num_sub;
    const int max_sub = p.max_blocks * (kBlockM / kSubM);
    for (int j = first; j < max_sub; j += stride) {
      int row0 = -1;
      if (j < num_sub) {
        const int e = expert_of_row(sub_offsets, p.num_experts, j * kSubM);
        row0 = offsets[e] + j * kSubM - sub_offsets[e];
      }
      p.sub_row0[j] = row0;
    }
  }
}

/// write_sub_rows after computing sub_offsets (shared scratch, [E + 1]) from counts. The caller
/// syncs before; every thread of the CTA calls it.
template <int kBlockM, int kSubM>
MOETUNE_DEVICE void write_sub_blocks(AlignParams const& p, const int* counts, const int* offsets,
                                     int* sub_offsets, int first, int stride) {
  if constexpr (kSubM < kBlockM) {
    padded_offsets_warp0<kSubM>(counts, sub_offsets, p.num_experts);
    __syncthreads();
    write_sub_rows<kBlockM, kSubM>(p, offsets, sub_offsets, first, stride);
  }
}

/// Pairs per thread of the one-CTA align's register path: up to this many x 1024 pairs (the
/// host's kSingleCtaAlignPairs) each thread loads its ids and weights once, keeps the slot the
/// histogram's atomic gave each pair in its expert, and stores the pair at its expert's padded
/// offset + that slot once the scan is done: three barriers in all.
constexpr int kAlignRegIds = 2;

/// Pairs the one-CTA align stages in shared memory (the host's kSingleCtaAlignPairs; above it,
/// with the lever align_multi_cta off, the pairs go straight to global memory).
constexpr int kAlignStagePairs = 4096;

/// The expert whose pairs end past k: the first e with ends[e] > k (ends: [num_experts],
/// ascending, ends[num_experts - 1] > k).
MOETUNE_DEVICE int expert_ending_after(const int* ends, int num_experts, int k) {
  int lo = 0, hi = num_experts - 1;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (ends[mid] > k)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

template <int kBlockM, int kSubM = kBlockM>
__global__ void __launch_bounds__(1024) moe_align_kernel(AlignParams p) {
  __shared__ int counts[kMaxExperts];
  __shared__ int offsets[kMaxExperts + 1];
  __shared__ int sub_offsets[kSubM < kBlockM ? kMaxExperts + 1 : 1];
  __shared__ int cursor_buf[kSubM < kBlockM ? 1 : kMaxExperts + 1];
  __shared__ int staged_pair[kAlignStagePairs];
  __shared__ float staged_weight[kAlignStagePairs];
  // The scatter's cursors: sub_offsets is free again once the sub-blocks are written.
  int* cursor = kSubM < kBlockM ? sub_offsets : cursor_buf;
  const int tid = threadIdx.x;
  pdl_launch_dependents();
  pdl_wait();
  if (tid < 4) p.sched[tid] = 0;
  for (int e = tid; e < p.num_experts; e += blockDim.x) counts[e] = 0;
  __syncthreads();
  if (p.num_pairs <= kAlignRegIds * (int)blockDim.x) {
    int ids[kAlignRegIds];
    float weights[kAlignRegIds];
    int slots[kAlignRegIds];
    load_ids<kAlignRegIds>(p.topk_ids, tid, blockDim.x, kAlignRegIds, p.num_pairs, p.num_experts,
                           ids);
#pragma unroll
    for (int j = 0; j < kAlignRegIds; ++j) {
      const int i = tid + j * (int)blockDim.x;
      weights[j] = i < p.num_pairs ? __ldg(p.topk_weights + i) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kAlignRegIds; ++j)
      slots[j] = ids[j] >= 0 ? atomicAdd(&counts[ids[j]], 1) : 0;
    __syncthreads();
    align_offsets_warp0<kBlockM, kSubM>(counts, offsets, sub_offsets, p.num_experts);
    __syncthreads();
    // Every write below goes to its own rows: no barrier between them.
    const int total_blocks = offsets[p.num_experts] / kBlockM;
    if (tid == 0) *p.num_blocks = total_blocks;
    for (int b = tid; b < p.max_blocks; b += blockDim.x) {
      p.block_expert[b] =
          b < total_blocks ? expert_of_row(offsets, p.num_experts, b * kBlockM) : -1;
    }
    fill_padding(p.sorted_pairs, offsets, counts, p.num_experts, tid / 32, blockDim.x / 32);
    write_sub_rows<kBlockM, kSubM>(p, offsets, sub_offsets, tid, blockDim.x);
#pragma unroll
    for (int j = 0; j < kAlignRegIds; ++j) {
      if (ids[j] >= 0) {
        const int row = offsets[ids[j]] + slots[j];
        p.sorted_pairs[row] = tid + j * (int)blockDim.x;
        p.sorted_weights[row] = weights[j];
      }
    }
    return;
  }
  for (int i = tid; i < p.num_pairs; i += blockDim.x) {
    int e = p.topk_ids[i];
    if (e >= 0 && e < p.num_experts) atomicAdd(&counts[e], 1);
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
  for (int r = tid; r < total_rows; r += blockDim.x) p.sorted_pairs[r] = -1;
  write_sub_blocks<kBlockM, kSubM>(p, counts, offsets, sub_offsets, tid, blockDim.x);
  __syncthreads();
  // Up to kAlignStagePairs pairs the list is built in shared memory, each expert's pairs packed
  // from cursor[e] (the unpadded offsets), and then written out in order: consecutive threads write
  // consecutive rows of sorted_pairs and sorted_weights. NOTE: scattered straight to global memory,
  // the two stores of each pair from this one CTA cost S2 M=512 (4096 pairs) 14.1 us of align on
  // the H200, against 10.5 with sorted_pairs alone; staged, 11.1 us (S1 M=512, 3072 pairs: 11.8 ->
  // 9.6), but up to 1 us more below ~1500 pairs, where the extra scan and barrier outweigh the
  // scatter.
  if (p.num_pairs <= kAlignStagePairs) {
    padded_offsets_warp0<1>(counts, cursor, p.num_experts);
    __syncthreads();
    for (int i = tid; i < p.num_pairs; i += blockDim.x) {
      const int e = __ldg(p.topk_ids + i);
      const float w = __ldg(p.topk_weights + i);
      if (e >= 0 && e < p.num_experts) {
        const int k = atomicAdd(&cursor[e], 1);
        staged_pair[k] = i;
        staged_weight[k] = w;
      }
    }
    __syncthreads();
    // cursor[e] is now where expert e's pairs end; cursor[num_experts], their total.
    for (int k = tid; k < cursor[p.num_experts]; k += blockDim.x) {
      const int e = expert_ending_after(cursor, p.num_experts, k);
      const int row = offsets[e] + k - (cursor[e] - counts[e]);
      p.sorted_pairs[row] = staged_pair[k];
      p.sorted_weights[row] = staged_weight[k];
    }
    return;
  }
  for (int e = tid; e < p.num_experts; e += blockDim.x) counts[e] = 0;  // reuse as cursors
  __syncthreads();
  for (int i = tid; i < p.num_pairs; i += blockDim.x) {
    const int e = __ldg(p.topk_ids + i);
    const float w = __ldg(p.topk_weights + i);
    if (e >= 0 && e < p.num_experts) {
      int pos = offsets[e] + atomicAdd(&counts[e], 1);
      p.sorted_pairs[pos] = i;
      p.sorted_weights[pos] = w;
    }
  }
}

// ---- Multi-CTA align for large M (two launches, each fully parallel) ----
// count: hist[e][c] = pairs of chunk c routed to expert e (one CTA per chunk of align_chunk_ids x
//        kAlignChunkThreads pairs; expert-major, so the place kernel reads each expert's counts as
//        one contiguous row)
// place: one CTA per chunk again. Each sums every expert's row of hist (all chunks: the totals,
//        and the chunks before its own: its first slot per expert), builds the padded offsets
//        itself, places its own pairs from those bases (smem atomics inside the chunk), and writes
//        its share, grid-strided, of block_expert, the -1 padding rows and the sub-blocks.
// NOTE: a third launch between them, one CTA of 1024 threads doing the scan and rewriting hist as
// bases, took 6.2-6.7 us under ncu at S1 M=4096 / S2 M=2048: a latency chain on one SM.
constexpr int kAlignChunkThreads = 256;
constexpr int kAlignChunkIds = 8;    // per thread, at most
constexpr int kAlignHistBatch = 16;  // hist loads in flight per thread

struct AlignMultiParams {
  AlignParams base;
  int* hist;  // [num_experts * num_chunks], expert-major
  int num_chunks;
};

/// Ids per thread of a chunk: the fewest that cover the pairs in num_chunks chunks (the host
/// picks num_chunks, at least num_pairs / (kAlignChunkThreads * kAlignChunkIds)).
MOETUNE_DEVICE int align_chunk_ids(AlignMultiParams const& p) {
  const int per = p.num_chunks * kAlignChunkThreads;
  return (p.base.num_pairs + per - 1) / per;
}

__global__ void __launch_bounds__(kAlignChunkThreads) moe_align_count_kernel(AlignMultiParams p) {
  __shared__ int counts[kMaxExperts];
  pdl_launch_dependents();
  pdl_wait();
  for (int e = threadIdx.x; e < p.base.num_experts; e += blockDim.x) counts[e] = 0;
  const int n = align_chunk_ids(p);
  int ids[kAlignChunkIds];
  load_ids(p.base.topk_ids, blockIdx.x * kAlignChunkThreads * n + threadIdx.x, kAlignChunkThreads,
           n, p.base.num_pairs, p.base.num_experts, ids);
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kAlignChunkIds; ++j) {
    if (ids[j] >= 0) atomicAdd(&counts[ids[j]], 1);
  }
  __syncthreads();
  for (int e = threadIdx.x; e < p.base.num_experts; e += blockDim.x) {
    p.hist[e * p.num_chunks + blockIdx.x] = counts[e];
  }
}

/// Threads that share one expert's row of hist in the place kernel: the largest power of two up to
/// 32 with tpe * num_experts <= kAlignChunkThreads (one pass over the experts), else 1.
MOETUNE_DEVICE int align_threads_per_expert(int num_experts) {
  int tpe = 1;
  while (tpe < 32 && 2 * tpe * num_experts <= kAlignChunkThreads) tpe *= 2;
  return tpe;
}

/// Sums hist[e][c] over c in [part * kAlignHistBatch, num_chunks) in steps of tpe * kAlignHistBatch
/// into *total, and over c < chunk into *before; kAlignHistBatch loads in flight at a time.
MOETUNE_DEVICE void sum_hist_row(const int* row, int num_chunks, int chunk, int part, int tpe,
                                 int* total, int* before) {
  int t = 0, b = 0;
  for (int c0 = part * kAlignHistBatch; c0 < num_chunks; c0 += tpe * kAlignHistBatch) {
    int v[kAlignHistBatch];
#pragma unroll
    for (int j = 0; j < kAlignHistBatch; ++j) v[j] = c0 + j < num_chunks ? __ldg(row + c0 + j) : 0;
#pragma unroll
    for (int j = 0; j < kAlignHistBatch; ++j) {
      t += v[j];
      if (c0 + j < chunk) b += v[j];
    }
  }
  *total = t;
  *before = b;
}

template <int kBlockM, int kSubM = kBlockM>
__global__ void __launch_bounds__(kAlignChunkThreads) moe_align_place_kernel(AlignMultiParams p) {
  constexpr bool kSub = kSubM < kBlockM;
  __shared__ int counts[kMaxExperts];
  __shared__ int offsets[kMaxExperts + 1];
  __shared__ int cursor[kMaxExperts];
  __shared__ int sub_offsets[kSub ? kMaxExperts + 1 : 1];
  const int E = p.base.num_experts;
  const int tid = threadIdx.x;
  const int chunk = blockIdx.x;
  pdl_launch_dependents();
  pdl_wait();
  // This chunk's ids and weights in flight first, then the hist rows.
  const int n = align_chunk_ids(p);
  const int first = chunk * kAlignChunkThreads * n + tid;
  float w[kAlignChunkIds];
#pragma unroll
  for (int j = 0; j < kAlignChunkIds; ++j) {
    const int i = first + j * kAlignChunkThreads;
    w[j] = j < n && i < p.base.num_pairs ? __ldg(p.base.topk_weights + i) : 0.0f;
  }
  int ids[kAlignChunkIds];
  load_ids(p.base.topk_ids, first, kAlignChunkThreads, n, p.base.num_pairs, E, ids);
  const int tpe = align_threads_per_expert(E);
  if (tpe == 1) {
    for (int e = tid; e < E; e += blockDim.x) {
      int total, before;
      sum_hist_row(p.hist + e * p.num_chunks, p.num_chunks, chunk, 0, 1, &total, &before);
      counts[e] = total;
      cursor[e] = before;
    }
  } else {  // one pass: tpe * E <= blockDim.x; lanes past the experts add zeros to the shuffles
    const int e = tid / tpe, part = tid % tpe;
    int total = 0, before = 0;
    if (e < E)
      sum_hist_row(p.hist + e * p.num_chunks, p.num_chunks, chunk, part, tpe, &total, &before);
    for (int d = tpe / 2; d >= 1; d /= 2) {
      total += __shfl_down_sync(0xffffffffu, total, d, tpe);
      before += __shfl_down_sync(0xffffffffu, before, d, tpe);
    }
    if (e < E && part == 0) {
      counts[e] = total;
      cursor[e] = before;
    }
  }
  __syncthreads();
  padded_offsets_warp0<kBlockM>(counts, offsets, E);
  __syncthreads();
  for (int e = tid; e < E; e += blockDim.x) cursor[e] += offsets[e];
  // The layer-wide outputs, each entry written by one thread of the grid.
  const int gtid = chunk * blockDim.x + tid;
  const int gsize = gridDim.x * blockDim.x;
  if (gtid < 4) p.base.sched[gtid] = 0;
  const int total_rows = offsets[E];
  const int total_blocks = total_rows / kBlockM;
  if (gtid == 0) *p.base.num_blocks = total_blocks;
  for (int b = gtid; b < p.base.max_blocks; b += gsize) {
    p.base.block_expert[b] = b < total_blocks ? expert_of_row(offsets, E, b * kBlockM) : -1;
  }
  fill_padding(p.base.sorted_pairs, offsets, counts, E, gtid >> 5, gsize >> 5);
  write_sub_blocks<kBlockM, kSubM>(p.base, counts, offsets, sub_offsets, gtid, gsize);
  __syncthreads();  // cursor
#pragma unroll
  for (int j = 0; j < kAlignChunkIds; ++j) {
    if (ids[j] >= 0) {
      const int pos = atomicAdd(&cursor[ids[j]], 1);
      p.base.sorted_pairs[pos] = first + j * kAlignChunkThreads;
      p.base.sorted_weights[pos] = w[j];
    }
  }
}

}  // namespace moetune_dev
