// bf16 <-> float conversion on the host, header-only and CUDA-free: the CPU backend stores bf16
// tensors as uint16_t bit patterns and computes in fp32.
#pragma once

#include <bit>
#include <cstdint>

namespace moetune::kernels::cpu {

/// Rounds `value` to the nearest bf16 (ties to even) and returns its bit pattern. Finite values
/// too large for bf16 round to +-inf, as IEEE rounding does; NaN stays a (quiet) NaN.
inline uint16_t float_to_bf16_bits(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    // NOTE: truncating a NaN whose payload lives in the low 16 bits would give inf; set the
    // quiet bit so it stays a NaN.
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  uint32_t const lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + lsb;
  return static_cast<uint16_t>(bits >> 16);
}

/// The float with the same value as the bf16 bit pattern `bits` (exact).
inline float bf16_bits_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

/// `value` rounded to bf16 and widened back to float.
inline float round_to_bf16(float value) { return bf16_bits_to_float(float_to_bf16_bits(value)); }

}  // namespace moetune::kernels::cpu
