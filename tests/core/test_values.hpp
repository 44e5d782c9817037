// Shared test values: every field set away from its default, so a dropped field is caught.
#pragma once

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/source.hpp"

namespace moetune::core::testing {

inline KernelConfig odd_kernel_config(int salt = 0) {
  return KernelConfig{.tile = {.block_m = 16, .block_n = 128 + salt, .block_k = 256, .group_m = 8},
                      .pipeline = {.num_warps = 8, .num_stages = 3, .split_k = 4},
                      .launch = {.swap_ab = true,
                                 .cluster_m = 2,
                                 .cluster_n = 4,
                                 .schedule = Schedule::kPingpong,
                                 .num_threads = 12}};
}

inline MoeConfig odd_moe_config() {
  return MoeConfig{.gemm1 = odd_kernel_config(0), .gemm2 = odd_kernel_config(-64)};
}

inline Source measured_source(double time_us = 31.25, double default_us = 40.5) {
  Source s;
  s.kind = "measured";
  s.date = "2026-09-19";
  s.device = "NVIDIA H200";
  s.protocol = "moetune-bench-v1: graph replay, L2 flush, median";
  s.numbers = {{"time_us", time_us}, {"default_us", default_us}};
  s.digest = "3e39677d";
  s.command = "moetune tune --shape demo";
  return s;
}

}  // namespace moetune::core::testing
