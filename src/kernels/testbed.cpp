// The tolerance table shared by every testbed (STYLE 22): one row per dtype with its reason.
#include "kernels/testbed.hpp"

namespace moetune::kernels {

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
