// sm90_decode_fused_kernel.cuh: lever decode_fused, the tiny-M decode path (launch.swap_ab) in one
// cooperative launch instead of two: one CTA of kFusedWarps warps per SM, all co-resident, that
// streams every byte of the layer's weights once through a ring of shared-memory slots.
//   - Route: every CTA reads topk_ids (at most kFusedMaxPairs pairs) and lists the U distinct
//     experts in order of first appearance, each with its pairs ascending.
//   - Work by bytes (FusedWalk): CTA b of G takes the b-th G-th of GEMM1's U x I h columns (each
//     column: a w1 row, gate and up rows for silu) and the b-th G-th of the K output columns
//     (each: one w2 row per distinct expert). Equal shares of bytes, so the CTAs end together.
//   - One producer thread bulk-copies (TMA) the CTA's items in order into kFusedSlots slots:
//     GEMM1's w1 rows, then GEMM2's w2 rows. It never waits on the grid, so GEMM2's first rows
//     land while the CTAs wait for h.
//   - x [M, K] is bulk-copied into shared memory first. Consumer warp w takes items w,
//     w + kFusedConsumers, ...: GEMM1 items write h[pair, c] = act(w1 rows . x[token]) (bf16,
//     pair order) as moe_decode_gemm1_kernel does; after the CTA's GEMM1 items the consumers meet
//     at a grid barrier (arrival count and generation in the workspace; the count is zero between
//     launches: the last CTA to arrive resets it) and copy h [M x top_k, I] into shared memory
//     over x; GEMM2 items keep dot(w2 row, h[pair]) in shared memory; then
//     out[t, c] = sum_j topk_weight[t, j] * dot(t, j, c), j ascending, one thread per (t, c).
// Bits: every dot product runs the decode kernels' per-lane order (16-byte vector v = lane + 32 i,
// i ascending, dot8) and their xor-shuffle tree, and the top-k sum their order, so the output
// equals the two-launch path's bit for bit whatever the knobs - the lever is class bitwise.
// Knobs: GEMM1's block_m (kBlockM pairs per pass); the rest of either decode config does not act
// here. The host takes this kernel only where a slot holds a column of either GEMM beside the
// dots (decode_fused_takes). Covered by tests/kernels/cuda/sm90_gather_test.cpp
// (Sm90Gather.DecodeFusedLeverGivesTheBitsOfItsOffPath, ...PhasesRunInOrder...) and
// tests/kernels/cuda/jit_compile_test.cpp (Sm90Jit.EveryFusedDecodeKernelThatFitsCompiles...).
#pragma once

#include "sm90_decode_kernel.cuh"
#include "sm90_tma.cuh"

namespace moetune_dev {

constexpr int kFusedMaxPairs = 128;  // M * top_k at most (the host falls back above)
constexpr int kFusedConsumers = 4;   // consumer warps
constexpr int kFusedWarps = kFusedConsumers + 1;  // and the producer warp, last
// Ring slots: two per consumer warp (a multiple of kFusedConsumers).
constexpr int kFusedSlots = 8;
constexpr int kFusedStep = 4;  // 16-byte vectors per lane loaded at once in the dot products
static_assert(kFusedSlots % kFusedConsumers == 0, "a slot must always serve the same warp");

struct DecodeFusedParams {
  const moe_bf16* x;          // [M, K]
  const moe_bf16* w1;         // [E, N1, K]
  const moe_bf16* w2;         // [E, K, I]
  moe_bf16* h;                // [M * top_k, I] (workspace)
  moe_bf16* out;              // [M, K]
  const int* topk_ids;        // [M * top_k]
  const float* topk_weights;  // [M * top_k]
  int* barrier;  // [2] (workspace): arrivals, zero between launches; generation, any value
  int hidden;    // K
  int inter;     // I
  int top_k, num_tokens, num_experts;
  int smem_bytes;  // dynamic shared memory: GEMM2's partial dots, x then h, the ring's slots
  // Optional (null in the layer): %globaltimer stamps, kFusedStamps per CTA (thread 0: past
  // pdl_wait, route listed, GEMM1 done (arrival), barrier passed, h copied, its own GEMM2 items
  // done, every consumer's done, combine done), then one per warp (a consumer's GEMM1 items done;
  // the producer's last copy issued), for the phase test and probes.
  long long* trace;
};

constexpr int kFusedStamps = 8;

MOETUNE_DEVICE long long global_timer_ns() {
  long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}

MOETUNE_DEVICE int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

/// 16-byte load through L1 of data this grid wrote before its barrier (h): not the non-coherent
/// path, which may serve lines from before the writes.
MOETUNE_DEVICE uint4 ld_16(const void* p) {
  uint4 r;
  asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p)
               : "memory");
  return r;
}

MOETUNE_DEVICE void st_shared_16(moe_u32 addr, uint4 v) {
  asm volatile("st.shared.v4.u32 [%0], {%1,%2,%3,%4};\n" ::"r"(addr), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}

/// Bulk copy of `bytes` (a multiple of 16) from global memory into this CTA's shared memory at
/// `dst`, completing that many bytes of `bar`'s transaction count.
MOETUNE_DEVICE void bulk_copy_g2s(moe_u32 dst, const void* src, int bytes, moe_u32 bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::
          "r"(dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}

/// Thread 0 of each CTA: waits until every CTA of the grid arrived. The arrival count must be zero
/// at launch (the workspace contract) and is zero again when this returns in every CTA; a count
/// outside [0, ctas) or a wait of ~10 s traps (a launch error, not a hang).
MOETUNE_DEVICE void fused_grid_barrier(int* bar, int ctas) {
  const int gen = ld_acquire_gpu(bar + 1);  // before arriving: the last arrival changes it
  __threadfence();                          // this CTA's h rows, before the arrival
  const int old = atomicAdd(bar, 1);
  if (old < 0 || old >= ctas) __trap();  // not zero at launch: the workspace was not zeroed
  if (old == ctas - 1) {
    atomicExch(bar, 0);
    __threadfence();
    atomicAdd(bar + 1, 1);
  } else {
    const long long t0 = clock64();
    while (ld_acquire_gpu(bar + 1) == gen) {
      __nanosleep(32);
      if (clock64() - t0 > (1ll << 34)) __trap();
    }
  }
  __threadfence();
}

/// The CTA's items in stream order: first GEMM1's, (distinct expert u, h column c, n columns) over
/// its share of the U x I flattened h columns (rem1 columns from expert u1's column c1), at most
/// r1 columns each and never across an expert; then GEMM2's, (u, output column c, n columns) for u
/// ascending over its output columns [lo2, hi2), at most r2 each. Every warp of the CTA walks the
/// same sequence. No division per item: a single producer thread issues every copy, and a 64-bit
/// division there (~100 instructions) capped the stream at ~2.5 TB/s on the H200 (call 3).
struct FusedWalk {
  int u1, c1, rem1;  // GEMM1 cursor and the columns left
  int inter, r1, r2, lo2, hi2, experts;
  int u2 = 0, c2 = 0;  // GEMM2 cursor (start() sets it to expert 0, column lo2)
  bool valid = false, gemm2 = false;
  int u = 0, c = 0, n = 0;  // the current item

  MOETUNE_DEVICE void start() {
    u2 = 0;
    c2 = lo2;
    load();
  }
  MOETUNE_DEVICE void load() {
    if (rem1 > 0) {
      gemm2 = false;
      u = u1;
      c = c1;
      n = min(min(r1, inter - c1), rem1);
      valid = true;
    } else if (u2 < experts && lo2 < hi2) {
      gemm2 = true;
      u = u2;
      c = c2;
      n = min(r2, hi2 - c2);
      valid = true;
    } else {
      valid = false;
    }
  }
  MOETUNE_DEVICE void next() {
    if (!gemm2) {
      rem1 -= n;
      if ((c1 += n) == inter) {
        c1 = 0;
        ++u1;
      }
    } else if ((c2 += n) >= hi2) {
      c2 = lo2;
      ++u2;
    }
    load();
  }
};

template <int kAct, bool kGated, int kBlockM>
__global__ void __launch_bounds__(kFusedWarps * 32, 1)
    moe_decode_fused_kernel(const __grid_constant__ DecodeFusedParams p) {
  constexpr int kHalves = kGated ? 2 : 1;
  constexpr int kConsumerThreads = kFusedConsumers * 32;
  __shared__ int s_e[kFusedMaxPairs];       // expert of each pair, -1 outside [0, E)
  __shared__ int s_first[kFusedMaxPairs];   // the first pair of the same expert
  __shared__ int s_before[kFusedMaxPairs];  // earlier pairs of the same expert
  __shared__ int s_cnt[kFusedMaxPairs];     // pairs of the same expert
  __shared__ int s_uidx[kFusedMaxPairs];    // distinct-expert index of a first pair
  __shared__ int s_order[kFusedMaxPairs];   // pairs by distinct expert, ascending within
  __shared__ int s_ustart[kFusedMaxPairs + 1];
  __shared__ int s_uexpert[kFusedMaxPairs];
  __shared__ int s_nu;
  __shared__ float s_w[kFusedMaxPairs];  // topk_weights
  __shared__ __align__(8) moe_u64 s_full[kFusedSlots];
  __shared__ __align__(8) moe_u64 s_empty[kFusedSlots];
  __shared__ __align__(8) moe_u64 s_xbar;  // x [M, K] landed in the activation region
  // [ceil(K / G)][P] fp32 dots of GEMM2; the activation region: x [M, K] for GEMM1, then h [P, I]
  // for GEMM2 (bf16); then the ring of kFusedSlots weight slots.
  extern __shared__ __align__(128) char s_dyn[];
  const int warp = threadIdx.x >> 5;
  const int lane = threadIdx.x & 31;
  const int P = p.num_tokens * p.top_k;
  const int K = p.hidden, I = p.inter;
  const int G = static_cast<int>(gridDim.x);
  const int b = static_cast<int>(blockIdx.x);
  const int lo2 = static_cast<int>(static_cast<long long>(K) * b / G);
  const int hi2 = static_cast<int>(static_cast<long long>(K) * (b + 1) / G);
  float* const s_dot = reinterpret_cast<float*>(s_dyn);
  const int dot_bytes = ((K + G - 1) / G * P * 4 + 127) / 128 * 128;
  const int x_bytes = p.num_tokens * K * 2;
  const int act_bytes = (max(x_bytes, P * I * 2) + 127) / 128 * 128;
  const int slot_bytes = (p.smem_bytes - dot_bytes - act_bytes) / kFusedSlots / 128 * 128;
  const moe_u32 act = smem_u32(s_dyn) + static_cast<moe_u32>(dot_bytes);
  const moe_u32 ring = act + static_cast<moe_u32>(act_bytes);
  const int row1 = K * 2, row2 = I * 2;  // bytes of a w1 row, of a w2 row
  const int r1 = slot_bytes / (kHalves * row1), r2 = slot_bytes / row2;
  auto stamp = [&](int i) {
    if (p.trace != nullptr && threadIdx.x == 0) p.trace[b * kFusedStamps + i] = global_timer_ns();
  };
  if (r1 < 1 || r2 < 1) __trap();  // the host's decode_fused_takes was wrong

  if (threadIdx.x == 0) {
    for (int s = 0; s < kFusedSlots; ++s) {
      mbar_init(smem_u32(&s_full[s]), 1);
      mbar_init(smem_u32(&s_empty[s]), 1);
    }
    mbar_init(smem_u32(&s_xbar), 1);
  }
  mbar_init_fence();
  pdl_wait();  // topk_ids and x from the kernels before
  stamp(0);
  for (int q = threadIdx.x; q < P; q += blockDim.x) {
    const int e = p.topk_ids[q];
    s_e[q] = e >= 0 && e < p.num_experts ? e : -1;
    s_w[q] = p.topk_weights[q];
  }
  __syncthreads();
  for (int q = threadIdx.x; q < P; q += blockDim.x) {
    const int e = s_e[q];
    int first = q, before = 0, cnt = 0;
    for (int r = P - 1; r >= 0; --r) {
      if (s_e[r] == e) {
        ++cnt;
        if (r < q) {
          ++before;
          first = r;
        }
      }
    }
    s_first[q] = first;
    s_before[q] = before;
    s_cnt[q] = cnt;
  }
  __syncthreads();
  if (warp == 0) {  // distinct experts in order of first appearance, and their first rows
    int base = 0, start = 0;
    for (int q0 = 0; q0 < P; q0 += 32) {
      const int q = q0 + lane;
      const bool head = q < P && s_e[q] >= 0 && s_first[q] == q;
      const int cnt = head ? s_cnt[q] : 0;
      const unsigned m = __ballot_sync(0xffffffffu, head);
      int incl = cnt;
#pragma unroll
      for (int d = 1; d < 32; d <<= 1) {
        const int v = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += v;
      }
      if (head) {
        const int u = base + __popc(m & ((1u << lane) - 1u));
        s_uidx[q] = u;
        s_uexpert[u] = s_e[q];
        s_ustart[u] = start + incl - cnt;
      }
      base += __popc(m);
      start += __shfl_sync(0xffffffffu, incl, 31);
    }
    if (lane == 0) {
      s_nu = base;
      s_ustart[base] = start;
    }
  }
  __syncthreads();
  for (int q = threadIdx.x; q < P; q += blockDim.x) {
    if (s_e[q] >= 0) s_order[s_ustart[s_uidx[s_first[q]]] + s_before[q]] = q;
  }
  __syncthreads();  // s_order
  stamp(1);
  const int U = s_nu;
  const long long T1 = static_cast<long long>(U) * I;
  const long long f0 = T1 * b / G;
  FusedWalk walk{static_cast<int>(f0 / I),
                 static_cast<int>(f0 % I),
                 static_cast<int>(T1 * (b + 1) / G - f0),
                 I,
                 r1,
                 r2,
                 lo2,
                 hi2,
                 U};
  walk.start();
  long long* const warp_trace =
      p.trace != nullptr
          ? p.trace + static_cast<long long>(G) * kFusedStamps + b * kFusedWarps + warp
          : nullptr;

  if (warp == kFusedConsumers) {
    // ------------------------------------------------------------ producer: one thread streams
    // every item's weight rows into the ring (slot g % kFusedSlots), whatever phase the consumers
    // are in, so GEMM2's first rows land while the grid waits for h.
    if (lane == 0) {
      const moe_u32 xbar = smem_u32(&s_xbar);
      mbar_arrive_expect_tx(xbar, x_bytes);
      if (x_bytes > 0) bulk_copy_g2s(act, p.x, x_bytes, xbar);
      for (int g = 0; walk.valid; ++g, walk.next()) {
        const int slot = g % kFusedSlots;
        const moe_u32 full = smem_u32(&s_full[slot]);
        if (g >= kFusedSlots) mbar_wait(smem_u32(&s_empty[slot]), (g / kFusedSlots - 1) & 1);
        const moe_u32 dst = ring + static_cast<moe_u32>(slot * slot_bytes);
        const long long e = s_uexpert[walk.u];
        if (!walk.gemm2) {  // gate rows [c, c + n), then (silu) up rows [I + c, I + c + n)
          const int bytes = walk.n * row1;
          mbar_arrive_expect_tx(full, bytes * kHalves);
          const moe_bf16* src = p.w1 + (e * kHalves * I + walk.c) * K;
          bulk_copy_g2s(dst, src, bytes, full);
          if (kGated) {
            bulk_copy_g2s(dst + static_cast<moe_u32>(bytes), src + static_cast<long long>(I) * K,
                          bytes, full);
          }
        } else {  // w2 rows [c, c + n) of the expert
          const int bytes = walk.n * row2;
          mbar_arrive_expect_tx(full, bytes);
          bulk_copy_g2s(dst, p.w2 + (e * K + walk.c) * I, bytes, full);
        }
      }
      if (warp_trace != nullptr) *warp_trace = global_timer_ns();
    }
    return;  // no CTA-wide barrier follows: the consumers sync among themselves (named barrier 1)
  }

  // -------------------------------------------------------------- consumers: warp w takes items
  // g = w, w + kFusedConsumers, ... (slot g % kFusedSlots: always the same warp's).
  const int nvec1 = K >> 3, nvec2 = I >> 3;
  mbar_wait(smem_u32(&s_xbar), 0);  // x
  bool arrived = false;
  for (int g = 0;; ++g, walk.next()) {
    if (!arrived && (!walk.valid || walk.gemm2)) {
      // Every consumer warp has finished its GEMM1 items: this CTA's h columns are written.
      if (lane == 0 && warp_trace != nullptr) *warp_trace = global_timer_ns();
      named_bar_sync(1, kConsumerThreads);
      stamp(2);
      if (threadIdx.x == 0) fused_grid_barrier(p.barrier, G);
      __syncwarp();  // warp 0 whole again before the aligned barrier
      named_bar_sync(1, kConsumerThreads);
      stamp(3);
      pdl_launch_dependents();  // every CTA is resident and past the barrier
      // h [P, I] over x in the activation region (every consumer is past its GEMM1 items), four
      // loads in flight per thread; rows of out-of-range pairs are copied but never read. Loads
      // through L1: this SM read none of h before the grid barrier.
      const int nv = P * I / 8;
      for (int i0 = threadIdx.x; i0 < nv; i0 += 4 * kConsumerThreads) {
        uint4 v[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int i = i0 + j * kConsumerThreads;
          if (i < nv) v[j] = ld_16(p.h + static_cast<long long>(i) * 8);
        }
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int i = i0 + j * kConsumerThreads;
          if (i < nv) st_shared_16(act + static_cast<moe_u32>(i * 16), v[j]);
        }
      }
      named_bar_sync(1, kConsumerThreads);
      stamp(4);
      arrived = true;
    }
    if (!walk.valid) break;
    if (g % kFusedConsumers != warp) continue;
    const int slot = g % kFusedSlots;
    mbar_wait(smem_u32(&s_full[slot]), (g / kFusedSlots) & 1);
    const moe_u32 sb = ring + static_cast<moe_u32>(slot * slot_bytes);
    const int pend = s_ustart[walk.u + 1];
    if (!walk.gemm2) {
      // h[pair, c + r] = act(w1 row . x[token(pair)]) for the expert's pairs, kBlockM at a time:
      // each lane runs the vectors v = lane + 32 i in ascending order (zeros past the row, as
      // decode_gemm1_pass), kFusedStep of them loaded at once, then warp_sum: the decode GEMM1's
      // bits. Weights from the slot, x from the activation region.
      for (int r = 0; r < walk.n; ++r) {
        const moe_u32 wrow[2] = {sb + static_cast<moe_u32>(r * row1),
                                 sb + static_cast<moe_u32>((walk.n + r) * row1)};
        for (int g0 = s_ustart[walk.u]; g0 < pend; g0 += kBlockM) {
          const int np = min(kBlockM, pend - g0);
          moe_u32 xrow[kBlockM];
          float acc[kHalves][kBlockM];
#pragma unroll
          for (int i = 0; i < kBlockM; ++i) {
            xrow[i] = act + static_cast<moe_u32>(s_order[g0 + min(i, np - 1)] / p.top_k * row1);
#pragma unroll
            for (int hh = 0; hh < kHalves; ++hh) acc[hh][i] = 0.0f;
          }
          for (int v0 = 0; v0 < nvec1; v0 += 32 * kFusedStep) {
            uint4 wv[kHalves][kFusedStep];
#pragma unroll
            for (int j = 0; j < kFusedStep; ++j) {
              const int v = v0 + 32 * j + lane;
#pragma unroll
              for (int hh = 0; hh < kHalves; ++hh) {
                wv[hh][j] = v < nvec1 ? ld_shared_16(wrow[hh] + static_cast<moe_u32>(v * 16))
                                      : make_uint4(0, 0, 0, 0);
              }
            }
#pragma unroll
            for (int i = 0; i < kBlockM; ++i) {
              if (i < np) {
                uint4 xv[kFusedStep];
#pragma unroll
                for (int j = 0; j < kFusedStep; ++j) {
                  const int v = v0 + 32 * j + lane;
                  xv[j] = v < nvec1 ? ld_shared_16(xrow[i] + static_cast<moe_u32>(v * 16))
                                    : make_uint4(0, 0, 0, 0);
                }
#pragma unroll
                for (int j = 0; j < kFusedStep; ++j) {
#pragma unroll
                  for (int hh = 0; hh < kHalves; ++hh) {
                    acc[hh][i] = dot8(wv[hh][j], xv[j], acc[hh][i]);
                  }
                }
              }
            }
          }
#pragma unroll
          for (int i = 0; i < kBlockM; ++i) {
            float v = warp_sum(acc[0][i]);
            if (kGated) {
              v = act_silu(v) * warp_sum(acc[kHalves - 1][i]);
            } else {
              v = apply_act<kAct>(v);
            }
            if (lane == i % 32 && i < np) {
              p.h[static_cast<long long>(s_order[g0 + i]) * I + walk.c + r] = float_to_bf16(v);
            }
          }
        }
      }
    } else {
      // dot(w2 row c + r, h[pair]) for the expert's pairs: the decode GEMM2's per-lane order
      // (guarded past the row), kFusedStep vectors loaded at once, and warp_sum. Weights from the
      // slot, h from the activation region.
      for (int r = 0; r < walk.n; ++r) {
        const moe_u32 wrow = sb + static_cast<moe_u32>(r * row2);
        for (int g0 = s_ustart[walk.u]; g0 < pend; g0 += kBlockM) {
          const int np = min(kBlockM, pend - g0);
          moe_u32 hrow[kBlockM];
          float acc[kBlockM];
#pragma unroll
          for (int i = 0; i < kBlockM; ++i) {
            hrow[i] = act + static_cast<moe_u32>(s_order[g0 + min(i, np - 1)] * row2);
            acc[i] = 0.0f;
          }
          for (int v0 = 0; v0 < nvec2; v0 += 32 * kFusedStep) {
            uint4 wv[kFusedStep];
#pragma unroll
            for (int j = 0; j < kFusedStep; ++j) {
              const int v = v0 + 32 * j + lane;
              wv[j] = v < nvec2 ? ld_shared_16(wrow + static_cast<moe_u32>(v * 16))
                                : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int i = 0; i < kBlockM; ++i) {
              if (i < np) {
                uint4 hv[kFusedStep];
#pragma unroll
                for (int j = 0; j < kFusedStep; ++j) {
                  const int v = v0 + 32 * j + lane;
                  hv[j] = v < nvec2 ? ld_shared_16(hrow[i] + static_cast<moe_u32>(v * 16))
                                    : make_uint4(0, 0, 0, 0);
                }
#pragma unroll
                for (int j = 0; j < kFusedStep; ++j) {
                  if (v0 + 32 * j + lane < nvec2) acc[i] = dot8(wv[j], hv[j], acc[i]);
                }
              }
            }
          }
#pragma unroll
          for (int i = 0; i < kBlockM; ++i) {
            const float d = warp_sum(acc[i]);
            if (lane == 0 && i < np) s_dot[(walk.c + r - lo2) * P + s_order[g0 + i]] = d;
          }
        }
      }
    }
    __syncwarp();
    if (lane == 0) mbar_arrive(smem_u32(&s_empty[slot]));  // the slot may be refilled
  }
  stamp(5);
  named_bar_sync(1, kConsumerThreads);  // every dot of this CTA's columns
  stamp(6);
  // out[t, c] = sum_j topk_weight[t, j] * dot(t, j, c), j ascending: the decode GEMM2's order.
  const int ncols = hi2 - lo2;
  for (int i = threadIdx.x; i < ncols * p.num_tokens; i += kConsumerThreads) {
    const int t = i / ncols, s = i % ncols;
    float sum = 0.0f;
    for (int j = 0; j < p.top_k; ++j) {
      const int q = t * p.top_k + j;
      sum = fmaf(s_w[q], s_e[q] >= 0 ? s_dot[s * P + q] : 0.0f, sum);
    }
    p.out[static_cast<long long>(t) * K + lo2 + s] = float_to_bf16(sum);
  }
  stamp(7);
}

}  // namespace moetune_dev
