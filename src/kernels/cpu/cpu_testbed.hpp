// The Testbed of the cpu backend: generated inputs (moe_data.hpp; fp8 problems' e4m3 layer from
// fp8_layer.hpp), the fp64 reference computed once per prepare, poisoned-output checks
// (output_check.hpp, under tolerance_for(problem)) and steady_clock timing.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/cpu_moe.hpp"
#include "kernels/cpu/fp8_layer.hpp"
#include "kernels/cpu/moe_data.hpp"
#include "kernels/testbed.hpp"

namespace moetune::kernels::cpu {

class CpuTestbed final : public Testbed {
 public:
  core::Backend const& backend() const override { return backend_; }
  /// See Testbed::prepare. Fails as generate_moe_data does; drops the previous reference.
  core::Status prepare(core::MoeProblem const& problem, core::RoutingProfile const& routing,
                       uint64_t seed) override;
  /// Runs `config` once on poisoned output and checks it against the fp64 reference (computed on
  /// the first call after prepare). Fails when prepare was not called, or with can_implement's
  /// reason.
  core::Result<CheckResult> check(core::MoeConfig const& config) override;
  /// `warmup` untimed runs, then `reps` runs each timed with steady_clock (microseconds);
  /// median_us is the median sample. Fails when reps < 1, warmup < 0, prepare was not called,
  /// or with can_implement's reason.
  core::Result<TimingResult> time(core::MoeConfig const& config, int warmup, int reps) override;

  /// The inputs of the last prepare (tests use them to run the kernel directly).
  MoeHostData const& data() const { return *data_; }
  /// The fp64 reference of the last prepare, computed on first use.
  core::Result<std::span<double const>> reference();
  /// The output of the last run, in the problem dtype (bf16 bits or float).
  void const* output() const;
  /// The fast paths later runs take (levers: cpu_register_tiles).
  void set_fast_paths(FastPaths const& fp) override { fast_paths_ = fp; }
  /// Arms the next check() to overwrite output element 0 (kWrongOutputValue or NaN) after the run;
  /// always true.
  bool corrupt_next_output(OutputFault fault) override {
    output_fault_ = fault;
    return true;
  }

 private:
  core::Status ready(core::MoeConfig const& config, char const* where) const;
  core::Status run_once(core::MoeConfig const& config);

  CpuBackend backend_;
  std::optional<MoeHostData> data_;
  std::optional<Fp8HostLayer> fp8_;  ///< fp8 problems: the e4m3 weights and scales
  std::optional<std::vector<double>> reference_;
  std::vector<uint16_t> out_bf16_;
  std::vector<float> out_fp32_;
  CpuMoeWorkspace workspace_;
  FastPaths fast_paths_;
  OutputFault output_fault_ = OutputFault::kNone;
};

}  // namespace moetune::kernels::cpu
