// Internal to cpu_tiled: the tile GEMMs, their epilogues and the top-k combine, one work item
// at a time. cpu_moe.cpp aligns, builds the tile lists and hands items to threads.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "kernels/cpu/cpu_moe.hpp"

namespace moetune::kernels::cpu::detail {

/// Everything a work item reads or writes. T is uint16_t (bf16 bits) or float.
template <class T>
struct MoeRunContext {
  core::Activation activation = core::Activation::kSiluGated;
  int64_t hidden = 0;      ///< K
  int64_t inter_size = 0;  ///< I
  int64_t gemm1_cols = 0;  ///< N1 (2I when gated)
  int64_t top_k = 1;
  int64_t padded_rows = 0;  ///< sum over experts of counts padded to block_m
  core::MoeConfig config;
  FastPaths fast_paths;  ///< cpu_register_tiles picks the microkernel
  T const* x = nullptr;
  T const* w1 = nullptr;
  T const* w2 = nullptr;
  T const* b1 = nullptr;  ///< [E, N1] or null (no biases)
  T const* b2 = nullptr;  ///< [E, K] or null
  float const* topk_weights = nullptr;
  T* out = nullptr;
  T* inter = nullptr;  ///< [padded_rows, I]
  CpuMoeWorkspace* ws = nullptr;
  /// fp8 layers (T = float): after GEMM1 each row of `inter` that holds a pair is rounded to bf16
  /// and quantised as the kernels quantise h (per 128 columns when fp8_block, else fp8_h_scale).
  bool fp8_h = false;
  bool fp8_block = false;
  float fp8_h_scale = 0;
};

/// Floats of packed A, packed B and accumulator one thread needs for `config`.
void size_thread_scratch(core::MoeConfig const& config, bool gated, CpuThreadScratch& scratch);

/// GEMM1 work item `item` = tile * split_k + split. With split_k = 1 it applies the activation
/// and stores the tile of the intermediate; otherwise it stores its partial sums.
template <class T>
void gemm1_item(MoeRunContext<T> const& ctx, int64_t item, CpuThreadScratch& scratch);
/// Sums the split_k partials of GEMM1 tile `tile` in split order, then applies the activation.
template <class T>
void gemm1_reduce(MoeRunContext<T> const& ctx, int64_t tile, CpuThreadScratch& scratch);
/// GEMM2 work item; with split_k = 1 it scales by the routing weight into pair_out.
template <class T>
void gemm2_item(MoeRunContext<T> const& ctx, int64_t item, CpuThreadScratch& scratch);
template <class T>
void gemm2_reduce(MoeRunContext<T> const& ctx, int64_t tile, CpuThreadScratch& scratch);
/// out[t] for t in [token_begin, token_end): pair_out summed over k = 0..top_k-1 in order.
template <class T>
void combine_tokens(MoeRunContext<T> const& ctx, int64_t token_begin, int64_t token_end);

}  // namespace moetune::kernels::cpu::detail
