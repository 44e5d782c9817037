// The problem the cuda tests build from a shape (E experts, hidden K, intermediate I, top_k, an
// activation) and M tokens: shared by the host-only jit_*_test.cpp and the GPU sm90_*_test.cpp.
#pragma once

#include <cstdint>

#include "core/problem.hpp"

namespace moetune::kernels::cuda::testing {

inline core::MoeProblem moe_shape(int64_t e, int64_t k, int64_t i, int64_t top_k,
                                  core::Activation act, int64_t m = 0) {
  core::MoeProblem p;
  p.num_experts = e;
  p.hidden_size = k;
  p.intermediate_size = i;
  p.top_k = top_k;
  p.activation = act;
  p.num_tokens = m;
  return p;
}

}  // namespace moetune::kernels::cuda::testing
