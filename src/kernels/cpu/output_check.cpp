// Poison, compare, digest; see output_check.hpp.
#include "kernels/cpu/output_check.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/cpu/bf16.hpp"

namespace moetune::kernels::cpu {
namespace {

bool is_poison(core::DType dtype, void const* out, int64_t index) {
  if (dtype == core::DType::kFp32) {
    uint32_t bits;
    std::memcpy(&bits, static_cast<char const*>(out) + index * 4, 4);
    return bits == kPoisonFp32;
  }
  return static_cast<uint16_t const*>(out)[index] == kPoisonBf16;
}

size_t element_bytes(core::DType dtype) { return dtype == core::DType::kFp32 ? 4 : 2; }

}  // namespace

void poison_output(core::DType dtype, void* out, int64_t count) {
  if (dtype == core::DType::kFp32) {
    auto* words = static_cast<uint32_t*>(out);
    for (int64_t i = 0; i < count; ++i) words[i] = kPoisonFp32;
    return;
  }
  auto* halves = static_cast<uint16_t*>(out);
  for (int64_t i = 0; i < count; ++i) halves[i] = kPoisonBf16;
}

std::string fnv1a_digest(void const* data, size_t bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  auto const* p = static_cast<unsigned char const*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 0x100000001b3ull;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, hash >>= 4) text[i] = kHex[hash & 0xf];
  return text;
}

double output_value(core::DType dtype, void const* out, int64_t index) {
  if (dtype == core::DType::kFp32) {
    float v;
    std::memcpy(&v, static_cast<char const*>(out) + index * 4, 4);
    return v;
  }
  return bf16_bits_to_float(static_cast<uint16_t const*>(out)[index]);
}

CheckResult check_output(core::DType dtype, void const* out, std::span<double const> reference,
                         Tolerance tolerance) {
  CheckResult result;
  int64_t const count = static_cast<int64_t>(reference.size());
  double ref_sq = 0;
  for (double r : reference) ref_sq += r * r;
  double const ref_rms = count > 0 ? std::sqrt(ref_sq / static_cast<double>(count)) : 0.0;

  double err_sq = 0;
  double worst_err = -1;
  int64_t worst = -1;
  for (int64_t i = 0; i < count; ++i) {
    // A poisoned element is reported as unwritten, not as a NaN the kernel produced.
    bool const poisoned = is_poison(dtype, out, i);
    double const v = output_value(dtype, out, i);
    bool const finite = poisoned || std::isfinite(v);
    result.all_written = result.all_written && !poisoned;
    result.all_finite = result.all_finite && finite;
    if (poisoned || !finite) {
      if (result.first_bad < 0) result.first_bad = i;
      continue;
    }
    double const err = std::abs(v - reference[i]);
    err_sq += err * err;
    if (err > worst_err) {
      worst_err = err;
      worst = i;
    }
    if (result.first_bad < 0 &&
        err > kElementSlack * tolerance.rel_l2 * (std::abs(reference[i]) + ref_rms)) {
      result.first_bad = i;
    }
  }
  if (!result.all_finite || !result.all_written) {
    result.rel_l2_error = std::numeric_limits<double>::infinity();
  } else if (ref_sq > 0) {
    result.rel_l2_error = std::sqrt(err_sq / ref_sq);
  } else {
    result.rel_l2_error = err_sq > 0 ? std::numeric_limits<double>::infinity() : 0.0;
  }
  if (result.first_bad < 0 && result.rel_l2_error > tolerance.rel_l2) {
    result.first_bad = worst;
  }
  result.digest = fnv1a_digest(out, static_cast<size_t>(count) * element_bytes(dtype));
  return result;
}

bool check_passed(CheckResult const& result, Tolerance tolerance) {
  return result.all_written && result.all_finite && result.first_bad < 0 &&
         result.rel_l2_error <= tolerance.rel_l2;
}

}  // namespace moetune::kernels::cpu
