// cpu_tiled: a tunable, multi-threaded fused MoE layer on the CPU.
//
// What it computes: out[t] = sum_k w[t,k] * w2[e] @ act(w1[e] @ x[t]), e = topk_ids[t,k], the
// layer reference.hpp computes in double. Steps:
//   1. align: count pairs per expert, prefix-sum the counts padded to block_m, and list the
//      token-expert pairs sorted by expert (pairs in increasing order, padding = -1);
//   2. GEMM1 + activation over (expert, m-block, n-block) tiles of block_m x block_n, block_k deep;
//      the result is rounded to the problem dtype (as a GPU kernel stores it);
//   3. GEMM2 + routing weight over the same m-blocks, into an fp32 buffer per pair;
//   4. combine: out[t] = sum over k = 0..top_k-1 in that order, rounded to the dtype once.
// Accumulation is fp32. split_k > 1 splits a GEMM's depth into chunks of whole block_k steps
// whose partial sums are added in split order. Layouts (row-major): x [M, K], w1 [E, N1, K]
// (gated: rows [0, I) gate, [I, 2I) up), w2 [E, K, I], out [M, K].
// Determinism: every output element is one fixed sequence of fp32 operations chosen by the
// config alone, so the bits do not depend on num_threads or on scheduling.
// fp8 (problem.quant, bf16 x and output, e4m3 weights with fp32 scales): x is quantised as the
// GPU kernels quantise it and dequantised, the weights are dequantised into fp32 buffers once per
// call, the layer runs in fp32, and after GEMM1 each row of h is rounded to bf16 and quantised the
// same way (fp8_layer.hpp's dequantised_row); the output is rounded to bf16 once.
// Limits: dtype bf16 (uint16_t bit patterns) or fp32; fp8 needs K, I and N1 multiples of 128.
// Tested by tests/kernels/cpu/cpu_moe_test.cpp (and cpu_fp8_test.cpp) against the fp64 references.
#pragma once

#include <cstdint>
#include <vector>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "kernels/fast_paths.hpp"

namespace moetune::kernels::cpu {

/// Pointers to one layer's tensors. Element type is the problem dtype: uint16_t bf16 bits for
/// bf16, float for fp32. May be null when M = 0 (w1/w2 may be null then too).
struct CpuMoeArgs {
  void const* x = nullptr;              ///< [M, K]
  int32_t const* topk_ids = nullptr;    ///< [M, top_k], each in [0, E)
  float const* topk_weights = nullptr;  ///< [M, top_k]
  void const* w1 = nullptr;             ///< [E, N1, K]
  void const* w2 = nullptr;             ///< [E, K, I]
  void* out = nullptr;                  ///< [M, K], fully overwritten
  void const* b1 = nullptr;             ///< [E, N1]; required when problem.has_bias
  void const* b2 = nullptr;             ///< [E, K]; required when problem.has_bias
  /// fp8 problems (w1, w2 e4m3 bytes): fp8_block w1_scale [E, N1/128, K/128], w2_scale
  /// [E, K/128, I/128]; fp8_tensor w1_scale, w2_scale [E] and the static a1_scale, a2_scale [1].
  float const* w1_scale = nullptr;
  float const* w2_scale = nullptr;
  float const* a1_scale = nullptr;
  float const* a2_scale = nullptr;
};

/// One tile of work: `rows` valid rows starting at padded sorted row `row0` of `expert`, output
/// columns [col0, col0 + cols).
struct MoeTile {
  int32_t expert = 0;
  int32_t row0 = 0;
  int32_t rows = 0;
  int32_t col0 = 0;
  int32_t cols = 0;
};

/// Per-thread scratch: packed A (block_m x block_k), packed B (block_k x width), the fp32
/// accumulator (block_m x width) and the row pointers of the current tile. width = block_n, or
/// 2 * block_n for GEMM1 of a gated activation (gate and up columns side by side).
struct CpuThreadScratch {
  std::vector<float> a_pack;
  std::vector<float> b_pack;
  std::vector<float> acc;
  std::vector<void const*> a_rows;
  std::vector<void const*> b_rows;
};

/// Buffers reused across runs so timing measures compute, not allocation. Opaque to callers;
/// one workspace per concurrent run.
struct CpuMoeWorkspace {
  std::vector<int32_t> expert_counts;   ///< [E] pairs routed to each expert
  std::vector<int32_t> expert_offsets;  ///< [E + 1] first padded row of each expert
  std::vector<int32_t> sorted_pairs;    ///< [padded rows] pair id t*top_k+k, or -1 (padding)
  std::vector<MoeTile> tiles1;          ///< GEMM1 tiles in raster order
  std::vector<MoeTile> tiles2;          ///< GEMM2 tiles in raster order
  std::vector<uint16_t> inter_bf16;     ///< [padded rows, I] activation, bf16 problems
  std::vector<float> inter_f32;         ///< [padded rows, I] activation, fp32 problems
  std::vector<float> pair_out;          ///< [M * top_k, K] weighted GEMM2 output per pair
  std::vector<float> partials;          ///< [split_k, padded rows, N] split-K partial sums
  std::vector<CpuThreadScratch> thread_scratch;  ///< one per worker thread
  std::vector<float> fp8_x, fp8_w1, fp8_w2;      ///< fp8: dequantised inputs (fp32)
  std::vector<float> fp8_b1, fp8_b2, fp8_out;    ///< fp8: biases and the output in fp32
};

/// Worker threads a KernelConfig asks for (num_threads, with 0 = hardware threads, at least 1).
int resolve_num_threads(core::KernelConfig const& k);

/// Runs the layer. Fails with cpu_tiled_can_implement's reason when the config is not
/// supported, and kInvalidArgument when a pointer is null (M > 0) or an expert id is outside
/// [0, E) (the message names the token, slot and id). `fast_paths` are the resolved levers
/// (cpu_register_tiles; the cuda fields are ignored).
core::Status run_cpu_moe(core::MoeProblem const& problem, core::MoeConfig const& config,
                         CpuMoeArgs const& args, CpuMoeWorkspace& workspace,
                         FastPaths const& fast_paths = {});

}  // namespace moetune::kernels::cpu
