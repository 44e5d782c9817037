// The op bodies shared by the torch ops (torch_ops.cpp) and the eager entry point
// (eager_entry.cpp).
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>

namespace moetune::python {

/// moetune::fused_moe's body: checks the tensors, runs the layer into a new [M, K] tensor on
/// torch's current stream (or the CPU backend) and returns it. Errors are c10 exceptions
/// (ValueError / TypeError in Python) naming the argument. Biases: both or neither.
/// `batch_invariant` turns lever batch_invariant on for this call's runner (docs/levers.md).
at::Tensor fused_moe_out_of_place(at::Tensor const& hidden_states, at::Tensor const& w1,
                                  at::Tensor const& w2, at::Tensor const& topk_weights,
                                  at::Tensor const& topk_ids, std::string const& activation,
                                  std::string const& config,
                                  std::optional<at::Tensor> const& w1_bias = std::nullopt,
                                  std::optional<at::Tensor> const& w2_bias = std::nullopt,
                                  bool batch_invariant = false);

}  // namespace moetune::python
