#include "kernels/cuda/sm90_gather_launch.hpp"

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstddef>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/sm90_decode_geometry.hpp"
#include "kernels/cuda/sm90_fp8_geometry.hpp"
#include "kernels/cuda/sm90_fp8_launch.hpp"
#include "kernels/cuda/sm90_layer_parts.hpp"
#include "kernels/cuda/sm90_tma_host.hpp"

namespace moetune::kernels::cuda {
namespace parts {

// Host mirrors of the device parameter structs (sm90_align_kernel.cuh, sm90_gather_kernel.cuh);
// field order and types must match exactly.
struct AlignParams {
  const int32_t* topk_ids;
  int32_t* sorted_pairs;
  int32_t* block_expert;
  int32_t* num_blocks;
  int num_pairs, num_experts, max_blocks;
  int32_t* sub_row0;
  int32_t* num_sub;
  const float* topk_weights;
  float* sorted_weights;
  int32_t* sched;
};
struct AlignMultiParams {
  AlignParams base;
  int32_t* hist;
  int num_chunks;
};
constexpr int kAlignChunkThreads = 256;  // sm90_align_kernel.cuh
constexpr int kAlignChunkIdsMax = 8;     // sm90_align_kernel.cuh: ids per thread, at most
constexpr int kAlignChunkIdsMin = 2;     // the fewest measured (sm90_align_chunks' NOTE)
constexpr int kAlignHistBatch = 16;      // sm90_align_kernel.cuh
/// sm90_align_kernel.cuh's align_threads_per_expert: threads of a place CTA that sum one expert's
/// row of the chunk histogram.
int align_threads_per_expert(int64_t num_experts) {
  int tpe = 1;
  while (tpe < 32 && 2 * tpe * num_experts <= kAlignChunkThreads) tpe *= 2;
  return tpe;
}
constexpr int64_t kAlignSmallChunkPairs = 32768;  // sm90_align_chunks
// Above this the multi-CTA align's launches run (its cost is shared-memory atomics, which one CTA
// does in turn). NOTE: on the H200 with chunks of 2048 pairs, handing over at 1024 or 2048 pairs
// instead of 4096 ran the layer at 0.978-1.015x, no gain; with the smaller chunks of
// sm90_align_chunks the align stage at 3072-4096 pairs took 8.1-8.4 us against 9.9-11.3 in one CTA
// (S1 / S2 M=512, S3 M=2048), and the same at 1536-2048. Up to here the one-CTA kernel holds the
// pairs in registers (sm90_align_kernel.cuh's kAlignRegIds x 1024 threads); above, with the lever
// off, it stages up to kAlignStagePairs (4096) in shared memory.
constexpr int kSingleCtaAlignPairs = 2048;
struct PermuteParams {  // sm90_gather_kernel.cuh
  const void* x;
  void* xp;
  const int32_t* sorted_pairs;
  const int32_t* num_blocks;
  int block_m, top_k, k_dim;
};
struct CombineParams {
  const void* y;
  void* out;
  int num_tokens, top_k, k_dim, split_k;
  const void* bias;
  const int32_t* topk_ids;
  const float* topk_weights;
  int num_experts;
};
size_t align_up(size_t v) { return (v + 255) / 256 * 256; }

// The swap-AB kernel's dynamic walk: GEMM1's tile counter and done count, then GEMM2's
// (sm90_swap_kernel.cuh); align zeroes them (moe_align_kernel, or the first threads of
// moe_align_place_kernel's grid).
constexpr int kSchedInts = 4;

/// A tma_ws GEMM1 of block_m 192 or 256 (sm90_ws_kernel.cuh) and a swap-AB GEMM1 of 128 and up
/// (sm90_swap_kernel.cuh) load x by TMA from a copy in sorted-row order.
bool gemm1_reads_permuted_x(GemmGeometry const& g1) {
  return g1.persistent() &&
         (g1.block_m == 256 || g1.block_m == 192 || (g1.swap && g1.block_m >= 128));
}

/// block_m: align's (GEMM2's); m_sub: GEMM1 tiles per align block; split_k: GEMM2's K splits
/// (fp32 partials instead of bf16 y rows); what else the kernels read or write: `needs`.
WorkspaceLayout layout_for(core::MoeProblem const& p, int block_m, int m_sub, int split_k,
                           LayoutNeeds needs) {
  const int64_t pairs = core::num_pairs(p);
  const int64_t mb = max_blocks(pairs, p.num_experts, block_m);
  WorkspaceLayout w;
  size_t off = 0;
  w.sorted_pairs = off;
  off += align_up(sizeof(int32_t) * mb * block_m);
  w.sorted_weights = off;
  off += align_up(sizeof(float) * mb * block_m);
  w.block_expert = off;
  off += align_up(sizeof(int32_t) * mb);
  w.num_blocks = off;
  off += align_up(sizeof(int32_t));
  if (m_sub > 1) {  // GEMM1's sub-blocks with pairs (sm90_align_kernel.cuh)
    w.sub_row0 = off;
    off += align_up(sizeof(int32_t) * mb * m_sub);
    w.num_sub = off;
    off += align_up(sizeof(int32_t));
  }
  w.hist = off;  // the chunk histogram at its most chunks (kAlignChunkIdsMin ids per thread)
  const int64_t min_chunk = int64_t{kAlignChunkThreads} * kAlignChunkIdsMin;
  off += align_up(sizeof(int32_t) * ((pairs + min_chunk - 1) / min_chunk) * p.num_experts);
  w.sched = off;  // the swap-AB walk: two counters per GEMM (align zeroes them)
  off += align_up(sizeof(int32_t) * kSchedInts);
  if (needs.bf16_h) {
    w.h = off;
    off += align_up(2 * static_cast<size_t>(mb) * block_m * p.intermediate_size);
  }
  w.y = off;
  off += align_up((split_k > 1 ? 4 * static_cast<size_t>(split_k) : 2) * pairs * p.hidden_size);
  if (needs.permuted_x) {
    w.xp = off;
    off += align_up(2 * static_cast<size_t>(mb) * block_m * p.hidden_size);
  }
  if (p.quant != core::Quant::kNone && needs.fp8_inputs) {  // fp8: both GEMMs' e4m3 inputs
    const size_t rows = static_cast<size_t>(mb) * block_m;
    const size_t m = static_cast<size_t>(p.num_tokens);
    const bool block = p.quant == core::Quant::kFp8Block;  // per-tensor: static scales, none here
    w.xq = off;
    off += align_up(m * p.hidden_size);
    if (block) {
      w.xs = off;
      off += align_up(4 * m * (p.hidden_size / core::kFp8BlockSize));
    }
    w.hq = off;
    off += align_up(rows * p.intermediate_size);
    if (block) {
      w.hs = off;
      off += align_up(4 * rows * (p.intermediate_size / core::kFp8BlockSize));
    }
  }
  w.total = off;
  return w;
}

/// The buffers GEMM1's geometry implies beyond align's tables and y.
LayoutNeeds layout_needs(GemmGeometry const& g1) {
  return LayoutNeeds{.permuted_x = gemm1_reads_permuted_x(g1),
                     .bf16_h = !fp8_gemm1_writes_hq(g1),
                     .fp8_inputs = !g1.decode};
}

WorkspaceLayout kernels_layout(Sm90GatherKernels const& k, core::MoeProblem const& p) {
  const int align_m = align_block_m(k.g1, k.g2);
  return layout_for(p, align_m, align_m / k.g1.block_m, k.g2.split_k, layout_needs(k.g1));
}

/// The caller's workspace against what layout `w` needs.
core::Status check_workspace(WorkspaceLayout const& w, size_t workspace_bytes, const char* where) {
  if (workspace_bytes >= w.total) return core::Status::Ok();
  return core::make_error(core::ErrorCode::kInvalidArgument, where,
                          "workspace of " + std::to_string(workspace_bytes) +
                              " bytes is below the " + std::to_string(w.total) +
                              " this M needs; size it with sm90_gather_workspace_bytes");
}

// Launches one kernel, with the programmatic-stream-serialization attribute when PDL is on.
/// cluster > 1: CTA clusters of that many CTAs along grid.x (a multiple of it).
cudaError_t launch(cudaKernel_t k, dim3 grid, dim3 block, void** params, size_t smem,
                   cudaStream_t stream, bool pdl, int cluster) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (pdl) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (cluster > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = static_cast<unsigned>(cluster);
    attr[n].val.clusterDim.y = 1;
    attr[n].val.clusterDim.z = 1;
    ++n;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  return cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(k), params);
}

}  // namespace parts

using namespace parts;

/// The multi-CTA align's chunks (the CTAs of each of its launches) for `pairs` over
/// `num_experts`: up to kAlignSmallChunkPairs pairs, as many as each place CTA sums in one batch
/// of histogram loads per thread (kAlignHistBatch x its threads per expert: 32 chunks at E = 128,
/// 512 at E = 8), of at least kAlignChunkIdsMin ids per thread; above, kAlignChunkIdsMax ids per
/// thread (2048 pairs a chunk). Smaller chunks shorten the place CTAs' chains of shared-memory
/// atomics; more chunks than one batch lengthen every CTA's histogram sum.
/// NOTE: on the H200 the align stage at 2 ids per thread against 8: S1 M=2048 9.5 vs 13.5 us, S2
/// 1024 8.8 vs 11.9, S2 4096 11.5 vs 13.3, but at 256 chunks (S2 M=16384) 32.9 vs 16.5; the layer
/// 0.987-0.996x at S1 M = 512-2048 and S2 512 in every round. At S1 M=8192 (49152 pairs, 6 ids per
/// thread) the align stage ran 0.5 us faster but the layer 1.012-1.023x in two calls (7 rounds,
/// cause not found), so above kAlignSmallChunkPairs the chunks stay at 2048 pairs.
int sm90_align_chunks(int64_t pairs, int64_t num_experts) {
  const int64_t max_chunks = int64_t{kAlignHistBatch} * align_threads_per_expert(num_experts);
  const int64_t want =
      (pairs + kAlignChunkThreads * max_chunks - 1) / (kAlignChunkThreads * max_chunks);
  const int64_t ids = pairs > kAlignSmallChunkPairs
                          ? kAlignChunkIdsMax
                          : std::clamp<int64_t>(want, kAlignChunkIdsMin, kAlignChunkIdsMax);
  const int64_t per = int64_t{kAlignChunkThreads} * ids;
  return static_cast<int>((pairs + per - 1) / per);
}

size_t sm90_gather_workspace_bytes(core::MoeProblem const& p, core::MoeConfig const& c) {
  const int align_m = std::max(c.gemm1.tile.block_m, c.gemm2.tile.block_m);
  auto g1 = gemm_geometry(p, c.gemm1, true);
  return layout_for(p, align_m, align_m / c.gemm1.tile.block_m, c.gemm2.pipeline.split_k,
                    g1.ok() ? layout_needs(*g1) : LayoutNeeds{})
      .total;
}

size_t sm90_gather_workspace_bytes(Sm90GatherKernels const& k, core::MoeProblem const& p) {
  return kernels_layout(k, p).total;
}

namespace parts {

LayerBuffers carve(WorkspaceLayout const& w, void* workspace, core::MoeProblem const& p,
                   int align_m, int m_sub) {
  char* ws = static_cast<char*>(workspace);
  LayerBuffers b;
  b.sorted_pairs = reinterpret_cast<int32_t*>(ws + w.sorted_pairs);
  b.sorted_weights = reinterpret_cast<float*>(ws + w.sorted_weights);
  b.block_expert = reinterpret_cast<int32_t*>(ws + w.block_expert);
  b.num_blocks = reinterpret_cast<int32_t*>(ws + w.num_blocks);
  b.sub_row0 = m_sub > 1 ? reinterpret_cast<int32_t*>(ws + w.sub_row0) : nullptr;
  b.num_sub = m_sub > 1 ? reinterpret_cast<int32_t*>(ws + w.num_sub) : nullptr;
  b.hist = reinterpret_cast<int32_t*>(ws + w.hist);
  b.sched = reinterpret_cast<int32_t*>(ws + w.sched);
  b.h = w.h > 0 ? ws + w.h : nullptr;
  b.y = ws + w.y;
  b.xp = w.xp > 0 ? ws + w.xp : nullptr;
  if (w.xq > 0) {
    b.xq = reinterpret_cast<unsigned char*>(ws + w.xq);
    b.hq = reinterpret_cast<unsigned char*>(ws + w.hq);
  }
  if (w.xs > 0) {
    b.xs = reinterpret_cast<float*>(ws + w.xs);
    b.hs = reinterpret_cast<float*>(ws + w.hs);
  }
  b.pairs = static_cast<int>(core::num_pairs(p));
  b.mb = static_cast<int>(max_blocks(b.pairs, p.num_experts, align_m));
  b.align_m = align_m;
  b.m_sub = m_sub;
  return b;
}

/// Route/align: one CTA up to kSingleCtaAlignPairs pairs, else (lever align_multi_cta) count and
/// place over CTAs of kAlignChunk pairs.
core::Status launch_align(Sm90GatherKernels const& k, core::MoeProblem const& p,
                          MoeArgs const& args, LayerBuffers const& b, cudaStream_t stream,
                          FastPaths const& fast_paths) {
  const AlignParams ap{args.topk_ids,
                       b.sorted_pairs,
                       b.block_expert,
                       b.num_blocks,
                       b.pairs,
                       static_cast<int>(p.num_experts),
                       b.mb,
                       b.sub_row0,
                       b.num_sub,
                       args.topk_weights,
                       b.sorted_weights,
                       b.sched};
  if (fast_paths.align_multi_cta && b.pairs > kSingleCtaAlignPairs) {
    AlignMultiParams mp{ap, b.hist, sm90_align_chunks(b.pairs, p.num_experts)};
    void* params[] = {&mp};
    const dim3 chunks(static_cast<unsigned>(mp.num_chunks));
    MOETUNE_CUDA_CHECK(
        launch(k.align_count, chunks, dim3(kAlignChunkThreads), params, 0, stream, fast_paths.pdl));
    MOETUNE_CUDA_CHECK(
        launch(k.align_place, chunks, dim3(kAlignChunkThreads), params, 0, stream, fast_paths.pdl));
    return core::Status::Ok();
  }
  AlignParams single = ap;
  void* params[] = {&single};
  MOETUNE_CUDA_CHECK(launch(k.align, dim3(1), dim3(1024), params, 0, stream, fast_paths.pdl));
  return core::Status::Ok();
}

namespace {

/// The swap-AB kernel's tensor maps (sm90_swap_kernel.cuh): the tile's weight rows in one box
/// (gated GEMM1: gate and up rows interleaved in 8-row groups), token rows in 64-row boxes and
/// 16-row ones.
core::Status encode_swap_maps(WsGemmParams& wp, GemmGeometry const& g, GemmParams const& gp,
                              uint64_t a_rows, core::MoeProblem const& p) {
  if (g.gated) {
    MOETUNE_RETURN_IF_ERROR(encode_tma_gated_interleave(
        &wp.tma_b, gp.b, static_cast<uint64_t>(p.num_experts), static_cast<uint64_t>(gp.n_dim),
        static_cast<uint64_t>(gp.k_dim), static_cast<uint32_t>(g.block_n / 8)));
  } else {
    MOETUNE_RETURN_IF_ERROR(encode_tma_2d(
        &wp.tma_b, gp.b, static_cast<uint64_t>(p.num_experts) * gp.b_rows_per_expert,
        static_cast<uint64_t>(gp.k_dim), static_cast<uint32_t>(g.b_rows()), "weights"));
  }
  if (a_rows > 0) {  // h rows, or x's sorted copy (a GEMM1 of block_m 64 gathers x's rows)
    MOETUNE_RETURN_IF_ERROR(
        encode_tma_2d(&wp.tma_a, gp.a, a_rows, static_cast<uint64_t>(gp.k_dim), 16, "token rows"));
    MOETUNE_RETURN_IF_ERROR(encode_tma_2d(&wp.tma_a_wide, gp.a, a_rows,
                                          static_cast<uint64_t>(gp.k_dim), 64, "token rows"));
  }
  return core::Status::Ok();
}

/// The tma_ws / pingpong kernels' tensor maps: weight rows of a warpgroup's columns, and A rows
/// (h, or x's sorted copy) in whole tiles or, at block_m 192 and 256, 64-row granules (the
/// kernel loads only those that hold pairs: kGranules in sm90_ws_shape.cuh; whole tiles on 1x2
/// clusters, which multicast them).
core::Status encode_ws_maps(WsGemmParams& wp, GemmGeometry const& g, GemmParams const& gp,
                            uint64_t a_rows, core::MoeProblem const& p) {
  MOETUNE_RETURN_IF_ERROR(encode_tma_2d(
      &wp.tma_b, gp.b, static_cast<uint64_t>(p.num_experts) * gp.b_rows_per_expert,
      static_cast<uint64_t>(gp.k_dim), static_cast<uint32_t>(g.block_n / g.warps_n), "weights"));
  if (a_rows > 0) {
    const bool granules = (g.block_m == 256 || g.block_m == 192) && g.cluster_n == 1;
    MOETUNE_RETURN_IF_ERROR(encode_tma_2d(&wp.tma_a, gp.a, a_rows, static_cast<uint64_t>(gp.k_dim),
                                          static_cast<uint32_t>(granules ? 64 : g.block_m), "h"));
  }
  return core::Status::Ok();
}

/// The tma_ws grid: at most one CTA per SM; with clusters one per pair of m-blocks (2x1) or of
/// n-tiles (1x2), at most as many as fit at once (`fit`).
unsigned ws_grid(GemmGeometry const& g, unsigned tiles, unsigned m_blocks, unsigned n_blocks,
                 int sm_count, int fit) {
  const unsigned cm = static_cast<unsigned>(g.cluster_m);
  const unsigned cn = static_cast<unsigned>(g.cluster_n);
  const unsigned cs = cm * cn;
  const unsigned units = cs > 1 ? (m_blocks + cm - 1) / cm * ((n_blocks + cn - 1) / cn) : tiles;
  const unsigned cap =
      cs > 1 ? std::min(static_cast<unsigned>(sm_count) / cs, static_cast<unsigned>(fit))
             : static_cast<unsigned>(sm_count);
  return cs * std::min(units, cap);
}

}  // namespace

/// One GEMM of the align path: a tile per CTA, or (persistent kernels) at most one CTA per SM
/// with the TMA maps of this call's pointers (B = the experts' weight rows; A = h rows for GEMM2,
/// a_rows of them).
core::Status launch_gemm(Sm90GatherKernels const& k, cudaKernel_t f, GemmGeometry const& g,
                         GemmParams gp, uint64_t a_rows, LayerBuffers const& b,
                         core::MoeProblem const& p, cudaStream_t stream,
                         FastPaths const& fast_paths) {
  const bool pdl = fast_paths.pdl;
  const unsigned n_blocks = static_cast<unsigned>((gp.n_dim + g.block_n - 1) / g.block_n);
  // GEMM1 in sub-blocks of align's blocks: at most m_sub tiles per block.
  const unsigned tiles = static_cast<unsigned>(b.mb) * static_cast<unsigned>(gp.m_sub) * n_blocks *
                         static_cast<unsigned>(g.split_k);
  if (!g.persistent()) {
    void* params[] = {&gp};
    MOETUNE_CUDA_CHECK(
        launch(f, dim3(tiles), dim3(g.threads()), params, g.smem_bytes(), stream, pdl));
    return core::Status::Ok();
  }
  WsGemmParams wp{};
  wp.g = gp;
  void* params[] = {&wp};
  if (g.swap) {
    MOETUNE_RETURN_IF_ERROR(encode_swap_maps(wp, g, gp, a_rows, p));
    // The dynamic walk over tiles (the kernel's own, not a lever: its tiles differ in pairs, so the
    // static walk left SMs idle at the end; same bits either way): this GEMM's two counters.
    wp.sched = b.sched + (f == k.gemm1 ? 0 : 2);
    const unsigned grid = std::min(tiles, static_cast<unsigned>(k.sm_count));
    MOETUNE_CUDA_CHECK(
        launch(f, dim3(grid), dim3(g.threads()), params, g.smem_bytes(), stream, pdl));
    return core::Status::Ok();
  }
  MOETUNE_RETURN_IF_ERROR(encode_ws_maps(wp, g, gp, a_rows, p));
  const unsigned grid = ws_grid(g, tiles, static_cast<unsigned>(b.mb), n_blocks, k.sm_count,
                                f == k.gemm1 ? k.clusters1 : k.clusters2);
  MOETUNE_CUDA_CHECK(launch(f, dim3(grid), dim3(g.threads()), params, g.smem_bytes(), stream, pdl,
                            g.cluster_m * g.cluster_n));
  return core::Status::Ok();
}

/// x in sorted-row order for a GEMM1 that loads it by TMA (gemm1_reads_permuted_x).
core::Status launch_permute(Sm90GatherKernels const& k, core::MoeProblem const& p,
                            MoeArgs const& args, LayerBuffers const& b, cudaStream_t stream,
                            bool pdl) {
  PermuteParams pp{args.x,
                   b.xp,
                   b.sorted_pairs,
                   b.num_blocks,
                   b.align_m,
                   static_cast<int>(p.top_k),
                   static_cast<int>(p.hidden_size)};
  void* params[] = {&pp};
  // One warp per row: 8 per CTA, at most 16 CTAs per SM (rows past the valid blocks exit).
  const long long rows = static_cast<long long>(b.mb) * b.align_m;
  const unsigned grid = static_cast<unsigned>(
      std::min<long long>((rows + 7) / 8, static_cast<long long>(k.sm_count) * 16));
  MOETUNE_CUDA_CHECK(launch(k.permute, dim3(grid), dim3(256), params, 0, stream, pdl));
  return core::Status::Ok();
}

/// GEMM1 + activation: x rows gathered by the sorted pairs (or, at block_m 192 and 256, read in
/// order from their sorted copy), h in expert-sorted padded order.
GemmParams gemm1_params(core::MoeProblem const& p, MoeArgs const& args, LayerBuffers const& b) {
  return GemmParams{b.xp != nullptr ? b.xp : args.x,
                    args.w1,
                    b.h,
                    b.sorted_pairs,
                    b.block_expert,
                    b.m_sub > 1 ? b.num_sub : b.num_blocks,  // GEMM1's tiles: sub-blocks with pairs
                    b.sorted_weights,
                    static_cast<int>(p.hidden_size),
                    static_cast<int>(p.intermediate_size),
                    static_cast<int>(core::gemm1_n(p)),
                    static_cast<int>(p.top_k),
                    b.mb,
                    1,
                    b.pairs,
                    b.m_sub,
                    b.sub_row0,
                    args.b1};
}

/// GEMM2 + routing weight: y rows per pair (bf16), or fp32 partials per K split.
GemmParams gemm2_params(core::MoeProblem const& p, MoeArgs const& args, LayerBuffers const& b,
                        int split_k) {
  return GemmParams{b.h,
                    args.w2,
                    b.y,
                    b.sorted_pairs,
                    b.block_expert,
                    b.num_blocks,
                    b.sorted_weights,
                    static_cast<int>(p.intermediate_size),
                    static_cast<int>(p.hidden_size),
                    static_cast<int>(p.hidden_size),
                    static_cast<int>(p.top_k),
                    b.mb,
                    split_k,
                    b.pairs,
                    1,
                    nullptr,
                    nullptr};
}

/// out[t] = sum_j y[t * top_k + j] (then over splits) in a fixed order.
core::Status launch_combine(Sm90GatherKernels const& k, core::MoeProblem const& p,
                            MoeArgs const& args, LayerBuffers const& b, cudaStream_t stream,
                            bool pdl) {
  CombineParams cp{b.y,
                   args.out,
                   static_cast<int>(p.num_tokens),
                   static_cast<int>(p.top_k),
                   static_cast<int>(p.hidden_size),
                   k.g2.split_k,
                   args.b2,
                   args.topk_ids,
                   args.topk_weights,
                   static_cast<int>(p.num_experts)};
  const long long threads = p.num_tokens * (p.hidden_size / 8);
  void* params[] = {&cp};
  MOETUNE_CUDA_CHECK(launch(k.combine, dim3(static_cast<unsigned>((threads + 255) / 256)),
                            dim3(256), params, 0, stream, pdl));
  return core::Status::Ok();
}

}  // namespace parts

core::Status launch_sm90_gather(Sm90GatherKernels const& k, core::MoeProblem const& p,
                                MoeArgs const& args, void* workspace, size_t workspace_bytes,
                                cudaStream_t stream, unsigned stages, FastPaths const& fast_paths) {
  if (p.num_tokens == 0) return core::Status::Ok();
  const int align_m = align_block_m(k.g1, k.g2);
  const int m_sub = align_m / k.g1.block_m;
  const bool permuted_x = gemm1_reads_permuted_x(k.g1);
  const WorkspaceLayout w = kernels_layout(k, p);
  MOETUNE_RETURN_IF_ERROR(check_workspace(w, workspace_bytes, "launch_sm90_gather"));
  const LayerBuffers b = carve(w, workspace, p, align_m, m_sub);
  if (p.quant != core::Quant::kNone) {
    return launch_fp8_layer(k, p, args, b, stream, stages, fast_paths);
  }
  if (k.g1.decode) return launch_decode(k, p, args, b, stream, stages, fast_paths);
  if (stages & kStageAlign)
    MOETUNE_RETURN_IF_ERROR(launch_align(k, p, args, b, stream, fast_paths));
  if (stages & kStageGemm1) {
    if (permuted_x) MOETUNE_RETURN_IF_ERROR(launch_permute(k, p, args, b, stream, fast_paths.pdl));
    MOETUNE_RETURN_IF_ERROR(launch_gemm(k, k.gemm1, k.g1, gemm1_params(p, args, b),
                                        permuted_x ? static_cast<uint64_t>(b.mb) * align_m : 0, b,
                                        p, stream, fast_paths));
  }
  if (stages & kStageGemm2) {
    MOETUNE_RETURN_IF_ERROR(launch_gemm(k, k.gemm2, k.g2, gemm2_params(p, args, b, k.g2.split_k),
                                        static_cast<uint64_t>(b.mb) * align_m, b, p, stream,
                                        fast_paths));
  }
  if (stages & kStageCombine) {
    MOETUNE_RETURN_IF_ERROR(launch_combine(k, p, args, b, stream, fast_paths.pdl));
  }
  return core::Status::Ok();
}

}  // namespace moetune::kernels::cuda
