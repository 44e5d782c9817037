// Float64 reference of one whole MoE layer: the plain, obviously-right computation every kernel
// (cpu_tiled, cuda) is checked against. No tiling, no threads, no rounding between the GEMMs.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/problem.hpp"
#include "core/result.hpp"

namespace moetune::kernels::cpu {

/// The inputs of one MoE layer as float arrays whose values are already rounded to the
/// problem's dtype. Shapes (row-major): x [M, K], topk_ids and topk_weights [M, top_k],
/// w1 [E, N1, K] with N1 = gemm1_n(problem), w2 [E, K, I].
struct MoeInputsView {
  std::span<float const> x;
  std::span<int32_t const> topk_ids;
  std::span<float const> topk_weights;
  std::span<float const> w1;
  std::span<float const> w2;
  std::span<float const> b1;  ///< [E, N1] when problem.has_bias, else empty
  std::span<float const> b2;  ///< [E, K] when problem.has_bias, else empty
};

/// act(gate, up) in double. Gated (silu): silu(gate) * up. Non-gated activations read only `h`
/// (the first argument): relu2 = relu(h)^2, gelu = exact erf GELU, gelu_tanh = tanh GELU.
/// swigluoai (gated): (clamp(up, -7, 7) + 1) * g * sigmoid(1.702 g), g = min(gate, 7).
double reference_activation(core::Activation act, double h, double up);

/// out[t, :] = sum_k topk_weights[t, k] * (w2[e] @ act(w1[e] @ x[t] + b1[e]) + b2[e]) with
/// e = topk_ids[t, k] (biases only when problem.has_bias), all in double; returns out [M, K]. Fails
/// (kInvalidArgument) when a span has the wrong length or an expert id is outside [0, E); the
/// message names the array, the length/id seen and the expected.
core::Result<std::vector<double>> reference_moe(core::MoeProblem const& problem,
                                                MoeInputsView const& inputs);

}  // namespace moetune::kernels::cpu
