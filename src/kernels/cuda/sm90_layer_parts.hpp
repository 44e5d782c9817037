// The pieces of an sm90_gather layer launch that its regimes share (sm90_gather_launch.cpp, the
// decode regime's sm90_decode_launch.cpp and the fp8 regime's sm90_fp8_launch.cpp): the workspace
// layout and its carving, the launch helper, and the align, decode and combine steps. Internal to
// kernels/cuda.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/problem.hpp"
#include "core/result.hpp"
#include "kernels/cuda/sm90_gather_launch.hpp"

namespace moetune::kernels::cuda::parts {

// Host mirrors of the GEMM kernels' parameter structs (sm90_gather_kernel.cuh GemmParams); field
// order and types must match exactly.
struct GemmParams {
  const void* a;
  const void* b;
  void* out;
  const int32_t* sorted_pairs;
  const int32_t* block_expert;
  const int32_t* num_blocks;
  const float* sorted_weights;
  int k_dim, n_dim, b_rows_per_expert, top_k, max_blocks, split_k, num_pairs;
  int m_sub;  // GEMM1 tiles per align block (sub-blocks under a GEMM2 of 256 rows), else 1
  const int32_t* sub_row0;
  const void* bias;  // GEMM1: b1 (read by kernels compiled with the bias bit); GEMM2: null
};
// sm90_decode_kernel.cuh DecodeParams (fp8: the first member of Fp8DecodeParams).
struct DecodeParams {
  const void* a;
  const void* b;
  void* out;
  const int32_t* topk_ids;
  const float* topk_weights;
  int k_dim, n_dim, b_rows_per_expert, top_k, num_pairs, num_experts;
  const void* bias;
};
// sm90_ws_params.cuh WsGemmParams: two 64-byte aligned CUtensorMaps, then GemmParams.
struct WsGemmParams {
  CUtensorMap tma_a;
  CUtensorMap tma_b;
  GemmParams g;
  int32_t* sched;          // swap-AB: the GEMM's two walk counters, else null
  CUtensorMap tma_a_wide;  // swap-AB: the token rows in 64-row boxes
};
// NOTE: the offsets are asserted exactly (the device struct's, by hand: NVRTC has no offsetof): the
// device's TmaDescriptor is 64-byte aligned, the host's CUtensorMap 128, so a field added before
// tma_a_wide can move it on one side only (448 on the device, 512 here: every swap-AB launch failed
// with cudaErrorIllegalInstruction on the H200). Add fields after the last map.
static_assert(sizeof(CUtensorMap) == 128 && offsetof(WsGemmParams, tma_b) == 128 &&
                  offsetof(WsGemmParams, g) == 256 && offsetof(WsGemmParams, sched) == 360 &&
                  offsetof(WsGemmParams, tma_a_wide) == 384 && sizeof(WsGemmParams) == 512,
              "WsGemmParams must match the device struct (two 128-byte maps, GemmParams, the "
              "swap-AB walk's counters, a third map)");

/// Byte offsets of the buffers of one call in the workspace.
struct WorkspaceLayout {
  size_t sorted_pairs = 0, sorted_weights = 0, block_expert = 0, num_blocks = 0, sub_row0 = 0,
         num_sub = 0, hist = 0, sched = 0, h = 0, y = 0, xp = 0, total = 0;  // h, xp: 0 = absent
  /// fp8 (problem quant): x and h quantised (e4m3) and their block scales (block-scaled only);
  /// 0 = absent.
  size_t xq = 0, xs = 0, hq = 0, hs = 0;
};

/// The workspace of one call, carved as layout_for says, and the align step's block counts.
struct LayerBuffers {
  int32_t* sorted_pairs = nullptr;
  float* sorted_weights = nullptr;  // each sorted row's routing weight (GEMM2's epilogue scale)
  int32_t* block_expert = nullptr;
  int32_t* num_blocks = nullptr;
  int32_t* sub_row0 = nullptr;  // GEMM1 under a GEMM2 of larger block_m (m_sub > 1), else null
  int32_t* num_sub = nullptr;
  int32_t* hist = nullptr;
  int32_t* sched = nullptr;  // kSchedInts counters of the swap-AB kernel's walk
  void* h = nullptr;         // null where an fp8 GEMM1 stores hq (no bf16 h)
  void* y = nullptr;
  void* xp = nullptr;  // x in sorted-row order (GEMM1 of block_m 192 or 256), else null
  // fp8 but not decode: xq [M, K] e4m3 and hq [rows, I]; block-scaled also xs [M, K/128] and
  // hs [rows, I/128] fp32; else null.
  unsigned char* xq = nullptr;
  float* xs = nullptr;
  unsigned char* hq = nullptr;
  float* hs = nullptr;
  int pairs = 0;    // M x top_k
  int mb = 0;       // align blocks at most (of align_m rows)
  int align_m = 0;  // align's block_m (GEMM2's)
  int m_sub = 1;    // GEMM1 tiles per align block
};

/// What a call's kernels need in the workspace beyond align's tables and y.
struct LayoutNeeds {
  bool permuted_x = false;  ///< GEMM1's copy of x in sorted-row order (block_m 192 / 256)
  bool bf16_h = true;       ///< GEMM1's bf16 h (false where an fp8 GEMM1 stores hq itself)
  /// fp8: x and h quantised (e4m3), with their group scales when block-scaled (per-tensor scales
  /// are the caller's); false for the decode kernels, which quantise in each CTA.
  bool fp8_inputs = true;
};

/// block_m: align's (GEMM2's); m_sub: GEMM1 tiles per align block; split_k: GEMM2's K splits
/// (fp32 partials instead of bf16 y rows); needs: the other buffers.
WorkspaceLayout layout_for(core::MoeProblem const& p, int block_m, int m_sub, int split_k,
                           LayoutNeeds needs);
/// The layout of loaded kernels `k` at M = p.num_tokens (their geometry, as launched).
WorkspaceLayout kernels_layout(Sm90GatherKernels const& k, core::MoeProblem const& p);
/// The caller's workspace against what layout `w` needs.
core::Status check_workspace(WorkspaceLayout const& w, size_t workspace_bytes, const char* where);
LayerBuffers carve(WorkspaceLayout const& w, void* workspace, core::MoeProblem const& p,
                   int align_m, int m_sub);

/// Launches one kernel, with the programmatic-stream-serialization attribute when `pdl`.
cudaError_t launch(cudaKernel_t k, dim3 grid, dim3 block, void** params, size_t smem,
                   cudaStream_t stream, bool pdl, int cluster = 1);

/// Route/align into b's sorted pairs and blocks.
core::Status launch_align(Sm90GatherKernels const& k, core::MoeProblem const& p,
                          MoeArgs const& args, LayerBuffers const& b, cudaStream_t stream,
                          FastPaths const& fast_paths);
/// Tiny M (decode configs): two launches, GEMM1 routes itself, GEMM2 combines itself
/// (sm90_decode_launch.cpp).
core::Status launch_decode(Sm90GatherKernels const& k, core::MoeProblem const& p,
                           MoeArgs const& args, LayerBuffers const& b, cudaStream_t stream,
                           unsigned stages, FastPaths const& fast_paths);
/// out[t] = sum_j y[t * top_k + j] (+ biases) in a fixed order.
core::Status launch_combine(Sm90GatherKernels const& k, core::MoeProblem const& p,
                            MoeArgs const& args, LayerBuffers const& b, cudaStream_t stream,
                            bool pdl);

}  // namespace moetune::kernels::cuda::parts
