// Helpers shared by the cpu kernel tests: small problems, running cpu_tiled on generated data,
// and one-line descriptions of a failing case (STYLE 22: print every parameter).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/routing.hpp"
#include "kernels/cpu/cpu_moe.hpp"
#include "kernels/cpu/moe_data.hpp"
#include "kernels/cpu/output_check.hpp"
#include "kernels/testbed.hpp"

namespace moetune::kernels::cpu::testing {

/// Seed of every generated case; override with MOETUNE_TEST_SEED.
uint64_t test_seed();

inline core::MoeProblem small_problem(int64_t m, int64_t e, int64_t k, int64_t inter, int64_t top_k,
                                      core::Activation act,
                                      core::DType dtype = core::DType::kBf16) {
  core::MoeProblem p;
  p.num_tokens = m;
  p.hidden_size = k;
  p.intermediate_size = inter;
  p.num_experts = e;
  p.top_k = top_k;
  p.activation = act;
  p.dtype = dtype;
  p.arch = "cpu";
  return p;
}

inline core::KernelConfig cpu_kernel(int block_m, int block_n, int block_k, int split_k = 1,
                                     int threads = 0, int group_m = 1) {
  core::KernelConfig k;
  k.tile = {.block_m = block_m, .block_n = block_n, .block_k = block_k, .group_m = group_m};
  k.pipeline.split_k = split_k;
  k.launch.num_threads = threads;
  return k;
}

/// Output of one cpu_tiled run, in the problem dtype's bits (bf16 as uint16, fp32 as uint32).
struct RunOutput {
  core::Status status;
  std::vector<uint32_t> storage;  ///< big enough for M*K elements of either dtype
  void const* data() const { return storage.data(); }
};

/// Runs cpu_tiled on `data` with poisoned output.
RunOutput run_cpu(MoeHostData const& data, core::MoeConfig const& config);

/// Runs `config` on `data` and checks against the fp64 reference `ref`.
CheckResult run_and_check(MoeHostData const& data, std::vector<double> const& ref,
                          core::MoeConfig const& config);

/// "MoeProblem(...) routing=... seed=N config=..." for failure messages.
std::string describe(core::MoeProblem const& p, core::RoutingProfile const& r, uint64_t seed,
                     core::MoeConfig const& c);

/// "first bad element i (token t, col c): got x, want y" or "no bad element".
std::string describe_bad(MoeHostData const& data, void const* out, std::vector<double> const& ref,
                         CheckResult const& result);

}  // namespace moetune::kernels::cpu::testing
