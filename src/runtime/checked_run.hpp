// run_checked: one MoeRunner call as an engine makes it, on generated inputs, checked against the
// fp64 CPU reference. `moetune run` uses it on both backends, so what it reports is the runner's
// own launch (cpu: host pointers; cuda: device buffers on a stream of its own), never a testbed.
#pragma once

#include <cstdint>
#include <string>

#include "core/result.hpp"
#include "core/routing.hpp"
#include "kernels/testbed.hpp"
#include "moetune/moe_runner.hpp"

namespace moetune::runtime {

/// What one checked call gave.
struct CheckedRun {
  Choice choice;
  kernels::CheckResult check;  ///< against the fp64 reference (default-constructed when M = 0)
  bool passed = false;         ///< kernels::cpu::check_passed under tolerance_for(problem)
  std::string executed_by;     ///< "runner (host buffers)" | "runner (device buffers, stream)"
};

/// Generates the inputs of M tokens (kernels::cpu::generate_moe_data with `routing`, `seed`; for
/// a problem with quant, e4m3 weights and scales from kernels::cpu::generate_fp8_layer), poisons
/// the output, calls runner.run(knobs) and checks every element against the fp64 reference
/// (fp8: reference_fp8_moe, which repeats the kernels' quantisation of x and h). On cuda the
/// tensors are copied to device buffers first, the call runs on a fresh stream, and the output is
/// copied back after the stream is synchronised. The reference runs on one CPU thread: keep M *
/// top_k * (N1 + I) * K within a few 1e10 (seconds). Fails when the runner refuses the call (the
/// runner's message), or on a CUDA error (the call that failed).
core::Result<CheckedRun> run_checked(MoeRunner& runner, core::RoutingProfile const& routing,
                                     int64_t m, Knobs const& knobs, uint64_t seed = 1);

}  // namespace moetune::runtime
