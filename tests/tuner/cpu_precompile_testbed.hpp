// Shared by the tuner tests: the cpu testbed with precompile left to the subclass (a compile that
// fails for one config, or one that is slow and records its calls). Everything else forwards to
// kernels::cpu::CpuTestbed; corrupt_next_output keeps the Testbed default (no fault support).
#pragma once

#include <vector>

#include "kernels/cpu/cpu_testbed.hpp"

namespace moetune::tuner::testing {

class CpuPrecompileTestbed : public kernels::Testbed {
 public:
  core::Backend const& backend() const override { return bed_.backend(); }
  core::Status prepare(core::MoeProblem const& p, core::RoutingProfile const& r,
                       uint64_t seed) override {
    return bed_.prepare(p, r, seed);
  }
  core::Result<kernels::CheckResult> check(core::MoeConfig const& c) override {
    return bed_.check(c);
  }
  core::Result<kernels::TimingResult> time(core::MoeConfig const& c, int w, int n) override {
    return bed_.time(c, w, n);
  }
  void set_fast_paths(kernels::FastPaths const& fp) override { bed_.set_fast_paths(fp); }
  std::vector<core::Status> precompile(std::vector<core::MoeConfig> const& configs) override = 0;

 private:
  kernels::cpu::CpuTestbed bed_;
};

}  // namespace moetune::tuner::testing
