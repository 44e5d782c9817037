// Float64 reference MoE layer; see reference.hpp. Kept deliberately naive: one token-expert pair
// at a time, a full dot product per output, no tiling.
#include "kernels/cpu/reference.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

namespace moetune::kernels::cpu {

double reference_activation(core::Activation act, double h, double up) {
  switch (act) {
    case core::Activation::kSiluGated: return h / (1.0 + std::exp(-h)) * up;
    case core::Activation::kRelu2: return h > 0.0 ? h * h : 0.0;
    case core::Activation::kGelu: return 0.5 * h * (1.0 + std::erf(h / std::numbers::sqrt2));
    case core::Activation::kGeluTanh: {
      double const c = std::sqrt(2.0 / std::numbers::pi);
      return 0.5 * h * (1.0 + std::tanh(c * (h + 0.044715 * h * h * h)));
    }
    case core::Activation::kSwigluOai: {
      double const g = std::min(h, core::kSwigluOaiLimit);
      double const u = std::clamp(up, -core::kSwigluOaiLimit, core::kSwigluOaiLimit);
      return (u + 1.0) * g / (1.0 + std::exp(-core::kSwigluOaiAlpha * g));
    }
  }
  return 0.0;
}

namespace {

core::Status check_length(char const* name, size_t seen, int64_t expected) {
  if (static_cast<int64_t>(seen) == expected) {
    return core::Status::Ok();
  }
  return core::make_error(core::ErrorCode::kInvalidArgument, "reference_moe",
                          std::string(name) + " has " + std::to_string(seen) +
                              " elements, expected " + std::to_string(expected) +
                              "; pass arrays shaped as documented in reference.hpp");
}

}  // namespace

core::Result<std::vector<double>> reference_moe(core::MoeProblem const& problem,
                                                MoeInputsView const& in) {
  int64_t const m = problem.num_tokens;
  int64_t const k = problem.hidden_size;
  int64_t const inter = problem.intermediate_size;
  int64_t const e = problem.num_experts;
  int64_t const top_k = problem.top_k;
  bool const gated = core::is_gated(problem.activation);
  int64_t const n1 = gated ? 2 * inter : inter;

  MOETUNE_RETURN_IF_ERROR(check_length("x", in.x.size(), m * k));
  MOETUNE_RETURN_IF_ERROR(check_length("topk_ids", in.topk_ids.size(), m * top_k));
  MOETUNE_RETURN_IF_ERROR(check_length("topk_weights", in.topk_weights.size(), m * top_k));
  MOETUNE_RETURN_IF_ERROR(check_length("w1", in.w1.size(), e * n1 * k));
  MOETUNE_RETURN_IF_ERROR(check_length("w2", in.w2.size(), e * k * inter));
  int64_t const bias = problem.has_bias ? 1 : 0;
  MOETUNE_RETURN_IF_ERROR(check_length("b1", in.b1.size(), bias * e * n1));
  MOETUNE_RETURN_IF_ERROR(check_length("b2", in.b2.size(), bias * e * k));

  std::vector<double> out(static_cast<size_t>(m * k), 0.0);
  std::vector<double> h(static_cast<size_t>(n1));
  std::vector<double> act(static_cast<size_t>(inter));
  for (int64_t t = 0; t < m; ++t) {
    float const* xt = in.x.data() + t * k;
    for (int64_t slot = 0; slot < top_k; ++slot) {
      int32_t const expert = in.topk_ids[t * top_k + slot];
      if (expert < 0 || expert >= e) {
        return core::make_error(core::ErrorCode::kInvalidArgument, "reference_moe",
                                "topk_ids[" + std::to_string(t) + ", " + std::to_string(slot) +
                                    "] = " + std::to_string(expert) + " is outside [0, " +
                                    std::to_string(e) + "); fix the routing");
      }
      double const weight = in.topk_weights[t * top_k + slot];
      float const* w1e = in.w1.data() + expert * n1 * k;
      float const* w2e = in.w2.data() + expert * k * inter;
      for (int64_t n = 0; n < n1; ++n) {
        double sum = 0.0;
        for (int64_t c = 0; c < k; ++c) {
          sum += static_cast<double>(w1e[n * k + c]) * static_cast<double>(xt[c]);
        }
        h[n] = bias ? sum + static_cast<double>(in.b1[expert * n1 + n]) : sum;
      }
      for (int64_t i = 0; i < inter; ++i) {
        act[i] = gated ? reference_activation(problem.activation, h[i], h[inter + i])
                       : reference_activation(problem.activation, h[i], 0.0);
      }
      for (int64_t c = 0; c < k; ++c) {
        double sum = 0.0;
        for (int64_t i = 0; i < inter; ++i) {
          sum += static_cast<double>(w2e[c * inter + i]) * act[i];
        }
        if (bias) sum += static_cast<double>(in.b2[expert * k + c]);
        out[t * k + c] += weight * sum;
      }
    }
  }
  return out;
}

}  // namespace moetune::kernels::cpu
