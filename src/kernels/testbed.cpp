// What every testbed shares: the tolerance table (STYLE 22: one row per dtype with its reason) and
// the median of timing samples.
#include "kernels/testbed.hpp"

#include <algorithm>

namespace moetune::kernels {

double median_us(std::vector<double> samples_us) {
  if (samples_us.empty()) return 0;
  std::sort(samples_us.begin(), samples_us.end());
  size_t const n = samples_us.size();
  return n % 2 == 1 ? samples_us[n / 2] : 0.5 * (samples_us[n / 2 - 1] + samples_us[n / 2]);
}

Tolerance tolerance_for(core::DType dtype) {
  switch (dtype) {
    case core::DType::kBf16:
      return {1e-2,
              "bf16 output rounding (2^-9 relative) plus the bf16-rounded intermediate between "
              "the GEMMs; fp32 accumulation adds little"};
    case core::DType::kFp16:
      return {5e-3,
              "fp16 output and intermediate rounding (2^-12 relative) with fp32 accumulation"};
    case core::DType::kFp32:
      return {1e-5,
              "fp32 accumulation over K and I terms (~sqrt(depth) * 2^-24), no rounding of "
              "inputs"};
  }
  return {0.0, "unknown dtype"};
}

Tolerance tolerance_for(core::MoeProblem const& problem) {
  if (problem.quant == core::Quant::kNone) return tolerance_for(problem.dtype);
  return {3e-2,
          "fp8: the reference repeats the kernels' quantisation, but its fp32 h sums in another "
          "order, so an element of h can round to the other bf16 neighbour and then e4m3 value "
          "(2^-4 relative), and a group's scale moves where that element is its amax; up to "
          "1.2e-2 seen at M = 1. A wrong block scale is off by orders of magnitude"};
}

}  // namespace moetune::kernels
