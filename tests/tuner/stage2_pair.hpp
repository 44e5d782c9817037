// Shared by the tuner tests whose cost model names two whole configs the search builds from its
// own stages: the first GEMM1 of the cpu family's block_m 16 group (for tiny_task) that has two
// feasible GEMM2 configs, with each of those two. Stage 1 times that GEMM1 with the group's base
// GEMM2, stage 2 times both configs, and `first` comes before `second` in search order.
#pragma once

#include <gtest/gtest.h>

#include "core/config.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "tuner/tuner_test_util.hpp"

namespace moetune::tuner::testing {

struct Stage2Pair {
  core::MoeConfig first, second;  ///< the same GEMM1; GEMM2 the first and second feasible ones
};

inline Stage2Pair stage2_pair() {
  kernels::cpu::CpuBackend backend;
  core::MoeProblem const p = tiny_task().problem;
  auto ok = [&](core::MoeConfig const& c) { return backend.can_implement(p, c).ok(); };
  for (core::GemmSpace const& g : backend.gemm_search_space(p)) {
    if (g.block_m != 16) continue;
    for (core::KernelConfig const& k1 : g.gemm1) {
      if (!ok({k1, g.base.gemm2})) continue;  // stage 1 times it with the base GEMM2
      std::vector<core::KernelConfig> k2s;
      for (core::KernelConfig const& k2 : g.gemm2) {
        if (ok({k1, k2})) k2s.push_back(k2);
      }
      if (k2s.size() >= 2) return {.first = {k1, k2s[0]}, .second = {k1, k2s[1]}};
    }
  }
  ADD_FAILURE() << "no block_m 16 GEMM1 with two feasible GEMM2 configs";
  return {};
}

}  // namespace moetune::tuner::testing
