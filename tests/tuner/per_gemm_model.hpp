// Shared by the per-GEMM search tests (per_gemm_test.cpp, per_gemm_ties_test.cpp): a cost model
// whose GEMM1 and GEMM2 optima differ, so the best config is known, and tune(), which runs
// tiny_task through an in-process worker into a fresh store.
#pragma once

#include <gtest/gtest.h>

#include "core/config.hpp"
#include "tuner/in_process_worker.hpp"
#include "tuner/search.hpp"
#include "tuner/tuner_test_util.hpp"

namespace moetune::tuner::testing {

/// Per GEMM: 10 us for a block_n, 7 for a block_k, 5 for a thread count and 3 for split_k off the
/// GEMM's own optimum; 4 us for block_m != 16. GEMM1's optimum is n128 k64 on all threads, GEMM2's
/// n32 k256 on one thread: no config with equal GEMMs reaches the 100 us of the best.
inline double cost(core::MoeConfig const& c) {
  auto off = [](core::KernelConfig const& k, int bn, int bk, int threads) {
    return (k.tile.block_n == bn ? 0 : 10) + (k.tile.block_k == bk ? 0 : 7) +
           (k.launch.num_threads == threads ? 0 : 5) + (k.pipeline.split_k == 1 ? 0 : 3) +
           (k.tile.group_m == 1 ? 0 : 2);
  };
  return 100.0 + off(c.gemm1, 128, 64, 0) + off(c.gemm2, 32, 256, 1) +
         (c.gemm1.tile.block_m == 16 ? 0 : 4);
}

inline BucketResult tune(InProcessWorker& worker, SearchOptions const& options = fast_options()) {
  auto store = Store::open(":memory:");
  auto r = tune_bucket(worker, **store, tiny_task(), options);
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return r.ok() ? *r : BucketResult{};
}

}  // namespace moetune::tuner::testing
