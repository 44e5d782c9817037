// Output checking shared by every testbed: poison before a run, then compare what the kernel
// wrote with the fp64 reference and digest the bits. Host-only, no CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/problem.hpp"
#include "kernels/testbed.hpp"

namespace moetune::kernels::cpu {

/// Poison written to every output element before a run: signalling-NaN bit patterns that no
/// arithmetic produces (arithmetic NaNs are quiet), so a leftover one means "never written".
inline constexpr uint16_t kPoisonBf16 = 0x7fa5;
inline constexpr uint32_t kPoisonFp32 = 0x7fa5a5a5u;

/// Per-element bound, in units of the rel-L2 tolerance: an element is bad when it is off by more
/// than kElementSlack * tolerance * (|ref| + rms(ref)). NOTE: element errors are roughly normal
/// with sigma ~ rel_l2 * rms; over 1e5 elements the largest is ~4.5 sigma, so 8x leaves a wide
/// margin (no flakes across seeds) while one corrupted element still stands out.
inline constexpr double kElementSlack = 8.0;

/// Writes the poison of `dtype` (bf16 or fp32) into `count` elements at `out`.
void poison_output(core::DType dtype, void* out, int64_t count);

/// 64-bit FNV-1a over `bytes` bytes, as 16 lower-case hex digits.
std::string fnv1a_digest(void const* data, size_t bytes);

/// Compares `reference.size()` elements of `out` (bf16 bits or float, per `dtype`) with the
/// reference. all_written: no poison left; all_finite: no NaN/Inf among the written elements;
/// rel_l2_error over all elements (inf when any is unwritten or not finite); first_bad: the first
/// element that is poisoned, not finite, or off by more than
/// kElementSlack * tolerance * (|ref| + rms(ref)); when none is but rel_l2 exceeds the tolerance,
/// the element with the largest error; else -1. digest: fnv1a_digest of the bits.
CheckResult check_output(core::DType dtype, void const* out, std::span<double const> reference,
                         Tolerance tolerance);

/// True when the run is right: everything written, finite, first_bad == -1 and rel_l2 within
/// the tolerance.
bool check_passed(CheckResult const& result, Tolerance tolerance);

/// Element `index` of `out` as a double (bf16 bits or float, per `dtype`).
double output_value(core::DType dtype, void const* out, int64_t index);

}  // namespace moetune::kernels::cpu
