// The checks every moetune torch op makes on its tensors before anything launches: dtype, device,
// rank, shape and strides of each argument against the others, each failure a Python exception
// that names the argument, what was seen and what was expected. None of them synchronises.
// Covered by tests/python/test_bad_input.py.
#pragma once

#include <ATen/ATen.h>

#include <string>

#include "core/problem.hpp"

namespace moetune::python {

/// The tensors of one fused_moe call, as the caller passed them.
struct MoeTensors {
  at::Tensor const& hidden_states;      ///< [M, K]
  at::Tensor const& w1;                 ///< [E, N1, K]; N1 = 2I (gated) or I
  at::Tensor const& w2;                 ///< [E, K, I]
  at::Tensor const& topk_weights;       ///< [M, top_k] fp32 or the hidden dtype
  at::Tensor const& topk_ids;           ///< [M, top_k] int32 or int64
  at::Tensor const* w1_bias = nullptr;  ///< [E, N1] in w1's dtype, or none (then no w2_bias)
  at::Tensor const* w2_bias = nullptr;  ///< [E, K] in w2's dtype
  /// fp8 (w1, w2 float8_e4m3fn; fused_moe_fp8): kFp8Block: w1_scale [E, N1/128, K/128] and
  /// w2_scale [E, K/128, I/128]; kFp8Tensor: w1_scale and w2_scale [E], a1_scale and a2_scale
  /// one value each. float32, on the device of hidden_states.
  core::Quant quant = core::Quant::kNone;
  at::Tensor const* w1_scale = nullptr;
  at::Tensor const* w2_scale = nullptr;
  at::Tensor const* a1_scale = nullptr;
  at::Tensor const* a2_scale = nullptr;
};

/// An optional tensor argument as MoeTensors holds it (nullptr for None).
inline at::Tensor const* bias_arg(std::optional<at::Tensor> const& b) {
  return b.has_value() && b->defined() ? &*b : nullptr;
}

/// The problem these tensors pose (M included), or a ValueError / TypeError naming the argument.
/// `op` prefixes every message ("moetune.fused_moe"). Ids are checked against E only on the CPU
/// (on a GPU that check would synchronise).
core::MoeProblem check_moe_tensors(MoeTensors const& t, std::string const& activation,
                                   char const* op);

/// topk_ids as contiguous int32 and topk_weights as contiguous fp32: the tensors themselves when
/// they already are, else converted copies (one small launch each on a GPU).
at::Tensor ids_as_int32(at::Tensor const& topk_ids);
at::Tensor weights_as_fp32(at::Tensor const& topk_weights);

}  // namespace moetune::python
