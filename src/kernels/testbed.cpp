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

}  // namespace moetune::kernels
