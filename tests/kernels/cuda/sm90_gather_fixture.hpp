// Shared by the sm90_gather device tests (sm90_gather_test.cpp, sm90_gather_families_test.cpp):
// the Sm90Gather fixture (one CudaTestbed per test suite; each test skips with a reason without a
// GPU), the config builders (wgmma, swap-AB) and the checks against the CPU fp64 reference
// (element by element) and the fp32 GPU reference (the bf16 band), each run twice for the same
// bits.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/reference.hpp"
#include "kernels/cuda/cuda_testbed.hpp"
#include "kernels/cuda/sm90_swap_geometry.hpp"
#include "kernels/cuda_factory.hpp"
#include "kernels/testbed.hpp"

namespace moetune::kernels::cuda::testing {

// One type for every file's TEST_F(Sm90Gather, ...): gtest needs a suite's tests on one fixture.
class Sm90Gather : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!cuda_device_present()) return;
    auto tb = CudaTestbed::create();
    if (tb.ok()) tb_ = std::move(tb).value().release();
  }
  static void TearDownTestSuite() {
    delete tb_;
    tb_ = nullptr;
  }
  void SetUp() override {
    if (!tb_) GTEST_SKIP() << "no CUDA device visible: sm90_gather tests run on the device machine";
  }
  inline static CudaTestbed* tb_ = nullptr;
};

inline float bf16f(uint16_t v) {
  uint32_t u = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A wgmma config (block_k 64): both GEMMs at block_m, GEMM1 block_n bn1, GEMM2 block_n bn2, the
// same warps, stages, raster and schedule.
inline core::MoeConfig wgmma(int bm, int bn1, int bn2, int warps, int stages, int group_m,
                             core::Schedule schedule) {
  core::KernelConfig k;
  k.tile = {.block_m = bm, .block_n = bn1, .block_k = 64, .group_m = group_m};
  k.pipeline = {.num_warps = warps, .num_stages = stages, .split_k = 1};
  k.launch.schedule = schedule;
  core::MoeConfig c{.gemm1 = k, .gemm2 = k};
  c.gemm2.tile.block_n = bn2;
  return c;
}

// A swap-AB config (launch.swap_ab with schedule tma_ws) on both GEMMs: block_m pairs per tile,
// `warps` consumer warps (64 weight rows per warpgroup, which sets block_n).
inline core::MoeConfig swap_ws(core::MoeProblem const& p, int bm, int warps, int stages,
                               int group_m = 8) {
  core::KernelConfig k;
  k.tile = {
      .block_m = bm, .block_n = swap_block_n(warps, false), .block_k = 64, .group_m = group_m};
  k.pipeline = {.num_warps = warps, .num_stages = stages, .split_k = 1};
  k.launch.swap_ab = true;
  k.launch.schedule = core::Schedule::kTmaWarpSpecialized;
  core::MoeConfig c{.gemm1 = k, .gemm2 = k};
  c.gemm1.tile.block_n = swap_block_n(warps, core::is_gated(p.activation));
  return c;
}

// The CPU fp64 reference of the prepared problem (computed once per prepare).
inline std::vector<double> fp64_reference(CudaTestbed& tb) {
  auto in = tb.download_inputs();
  EXPECT_TRUE(in.ok());
  cpu::MoeInputsView view{in->x, in->topk_ids, in->topk_weights, in->w1, in->w2};
  auto ref = cpu::reference_moe(tb.problem(), view);
  EXPECT_TRUE(ref.ok()) << ref.error().to_string();
  return ref.ok() ? *ref : std::vector<double>{};
}

// Checks `cfg` on the prepared problem against `ref`, all elements, and runs it twice.
inline void expect_matches_fp64(CudaTestbed& tb, core::MoeConfig const& cfg,
                                std::vector<double> const& ref, std::string const& what) {
  auto chk = tb.check(cfg);
  ASSERT_TRUE(chk.ok()) << what << ": " << chk.error().to_string();
  EXPECT_TRUE(chk->all_written) << what << " first unwritten " << chk->first_bad;
  EXPECT_TRUE(chk->all_finite) << what;
  auto const& out = tb.last_output();
  ASSERT_EQ(out.size(), ref.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double d = bf16f(out[i]) - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  const double err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  EXPECT_LE(err, tolerance_for(core::DType::kBf16).rel_l2)
      << what << " " << core::short_string(cfg);
  auto again = tb.check(cfg);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->digest, chk->digest) << what << ": two runs differ in bits";
}

// Checks `cfg` twice on the prepared problem: all written, finite, within the bf16 band of the
// fp32 GPU reference, and the same bits both times. Returns the digest ("" if it could not run).
inline std::string expect_in_band_and_deterministic(CudaTestbed& tb, core::MoeConfig const& cfg,
                                                    std::string const& what) {
  auto a = tb.check(cfg);
  EXPECT_TRUE(a.ok()) << what << ": " << (a.ok() ? std::string() : a.error().to_string());
  if (!a.ok()) return "";
  EXPECT_TRUE(a->all_written && a->all_finite) << what << " " << core::short_string(cfg);
  EXPECT_LE(a->rel_l2_error, tolerance_for(core::DType::kBf16).rel_l2)
      << what << " " << core::short_string(cfg);
  auto b = tb.check(cfg);
  EXPECT_TRUE(b.ok()) << what;
  if (b.ok()) EXPECT_EQ(a->digest, b->digest) << what << ": two runs differ in bits";
  return a->digest;
}

}  // namespace moetune::kernels::cuda::testing
