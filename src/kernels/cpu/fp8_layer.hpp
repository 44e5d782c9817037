// The host fp8 layer of a problem with quant fp8_block / fp8_tensor: e4m3 conversion, generated
// e4m3 weights with their fp32 scales and static input scales, and the fp64 reference that
// repeats the kernels' quantisation of x and h. `moetune run` checks an fp8 runner with it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/problem.hpp"
#include "core/result.hpp"

namespace moetune::kernels::cpu {

/// The largest finite e4m3 value.
inline constexpr float kE4m3Max = 448.0f;
/// What callers XOR into the seed they give generate_moe_data before they give it to
/// generate_fp8_layer: with the same seed, the same draws made w1's first rows a scaled copy of x's
/// first token.
inline constexpr uint64_t kFp8LayerStream = 0xf8f8f8f8f8f8f8f8ULL;

/// x as e4m3 (E4M3FN: bias 7, no infinities, 0x7F / 0xFF NaN), rounded to nearest even and
/// saturated to +-448, as cvt.rn.satfinite.e4m3x2.f32 does; NaN gives 0x7F.
uint8_t float_to_e4m3(float x);
/// The e4m3 value of `bits` (exact in float).
float e4m3_to_float(uint8_t bits);

/// One activation row (x or h; cols a multiple of 128) quantised as the kernels quantise it and
/// dequantised: out[c] = e4m3(v[c] / s) * s, s = max(amax of c's 128 columns, 1e-10) / 448 in
/// float when `block`, else `scale`; the division is IEEE float. `out` may be `v`.
void dequantised_row(float const* v, int64_t cols, bool block, float scale, double* out);
void dequantised_row(float const* v, int64_t cols, bool block, float scale, float* out);

/// w (e4m3, [E, rows, cols]) dequantised into out (float, same shape) with per-expert scales
/// ([E]) or, when `block`, per 128 x 128 block scales ([E, rows / 128, cols / 128]).
void dequantise_weights(uint8_t const* w, float const* scale, bool block, int64_t experts,
                        int64_t rows, int64_t cols, float* out);

/// e4m3 weights and their scales. Shapes (row-major): w1 [E, N1, K], w2 [E, K, I];
/// fp8_block: w1_scale [E, N1/128, K/128], w2_scale [E, K/128, I/128], input scales unused (x and
/// h are quantised per token per 128 columns, scale amax / 448); fp8_tensor: w1_scale and
/// w2_scale [E], a1_scale (x) and a2_scale (h) static.
struct Fp8HostLayer {
  std::vector<uint8_t> w1;
  std::vector<uint8_t> w2;
  std::vector<float> w1_scale;
  std::vector<float> w2_scale;
  float a1_scale = 0;
  float a2_scale = 0;
};

/// Draws the layer of `problem` from one std::mt19937_64 seeded with `seed`, as the cuda testbed
/// draws its own: weights e4m3(64 N(0, 1)), scales base * 10^u with u uniform in [-2, 2] per
/// 128 x 128 block (fp8_block: neighbouring blocks differ by up to four orders of magnitude, so a
/// wrong block's scale fails a check) or in [-0.5, 0.5] per expert (fp8_tensor), base such that
/// the dequantised weights are ~ N(0, 1 / depth); static input scales 8 / 448 (x ~ N(0, 1)) and
/// 16 / 448 (h). Fails for a problem without quant, or whose K, I or N1 is no multiple of 128.
core::Result<Fp8HostLayer> generate_fp8_layer(core::MoeProblem const& problem, uint64_t seed);

/// out [M, K] of the fp8 layer in double, for x [M, K] (bf16 values), topk_ids / topk_weights
/// [M, top_k], biases b1 [E, N1] / b2 [E, K] when problem.has_bias (else empty): x quantised as
/// the kernels do (fp8_block: per token per 128 columns, scale = amax / 448 in float, each value
/// e4m3(v / scale) by IEEE division; fp8_tensor: a1_scale), every operand dequantised, GEMM1 and
/// the activation in double, h rounded to bf16 (as GEMM1 stores it) and quantised the same way
/// (a2_scale), GEMM2 and the weighted sum in double. Fails (kInvalidArgument) on a span of the
/// wrong length or an expert id outside [0, E).
core::Result<std::vector<double>> reference_fp8_moe(
    core::MoeProblem const& problem, Fp8HostLayer const& layer, std::span<float const> x,
    std::span<int32_t const> topk_ids, std::span<float const> topk_weights,
    std::span<float const> b1, std::span<float const> b2);

}  // namespace moetune::kernels::cpu
