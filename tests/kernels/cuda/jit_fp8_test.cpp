// The fp8 regime of sm90_gather without a GPU: what can_implement accepts and refuses (with the
// field named), the default rule and search space stay implementable, and every default kernel
// compiles with NVRTC with no register spills and no serialised wgmma.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "fresh_cubin_cache.hpp"
#include "kernels/cuda/jit.hpp"
#include "kernels/cuda/sm90_fp8_geometry.hpp"
#include "kernels/cuda/sm90_gather_defaults.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"
#include "kernels/cuda/sm90_gather_load.hpp"
#include "kernels/cuda/sm90_gather_space.hpp"
#include "moe_shape.hpp"

namespace moetune::kernels::cuda {
namespace {

using testing::FreshCubinCache;
using testing::moe_shape;

core::MoeProblem fp8(core::MoeProblem p, core::Quant q, int64_t m) {
  p.quant = q;
  p.num_tokens = m;
  return p;
}

/// DeepSeek-V3-like and Qwen3-30B-A3B-like (block), Mixtral-like (per-tensor), and a non-gated
/// shape in both modes.
std::vector<core::MoeProblem> shapes(int64_t m) {
  using core::Activation;
  using core::Quant;
  return {fp8(moe_shape(256, 7168, 2048, 8, Activation::kSiluGated), Quant::kFp8Block, m),
          fp8(moe_shape(128, 2048, 768, 8, Activation::kSiluGated), Quant::kFp8Block, m),
          fp8(moe_shape(8, 4096, 14336, 2, Activation::kSiluGated), Quant::kFp8Tensor, m),
          fp8(moe_shape(64, 1024, 512, 4, Activation::kRelu2), Quant::kFp8Block, m),
          fp8(moe_shape(64, 1024, 512, 4, Activation::kGelu), Quant::kFp8Tensor, m)};
}

std::string refusal(core::MoeProblem const& p, core::MoeConfig const& c) {
  auto st = sm90_can_implement(p, c);
  return st.ok() ? "accepted" : st.error().to_string();
}

TEST(Fp8Geometry, DefaultsAndEverySearchedConfigAreImplementable) {
  for (int64_t m : {1, 7, 64, 512, 4096, 16384}) {
    for (auto const& p : shapes(m)) {
      auto const c = sm90_default_config(p);
      EXPECT_EQ(refusal(p, c), "accepted") << core::to_string(p);
      auto const space = sm90_joint_search_space(p);
      EXPECT_GE(space.size(), 8u) << core::to_string(p);
      for (auto const& s : space) EXPECT_EQ(refusal(p, s), "accepted") << core::short_string(s);
      EXPECT_FALSE(sm90_gemm_search_space(p).empty()) << core::to_string(p);
    }
  }
}

TEST(Fp8Geometry, RefusesWhatTheKernelCannotRunNamingTheField) {
  auto const p = shapes(64)[1];  // block-scaled, gated
  auto c = sm90_default_config(p);
  auto wide = c;
  wide.gemm1.tile.block_n = 128;  // width 256 with partial sums: 256 accumulator registers
  EXPECT_NE(refusal(p, wide).find("gemm1.tile.block_n = 128"), std::string::npos)
      << refusal(p, wide);
  auto ws = c;
  ws.gemm2.launch.schedule = core::Schedule::kTmaWarpSpecialized;
  EXPECT_NE(refusal(p, ws).find("fp8 runs schedule cooperative only"), std::string::npos)
      << refusal(p, ws);
  auto bk = c;
  bk.gemm2.tile.block_k = 64;
  EXPECT_NE(refusal(p, bk).find("gemm2.tile.block_k = 64"), std::string::npos) << refusal(p, bk);
  auto mixed = c;
  mixed.gemm2.tile.block_m = 128;
  mixed.gemm2.pipeline.num_warps = 8;
  EXPECT_NE(refusal(p, mixed).find("differs from gemm2.tile.block_m"), std::string::npos)
      << refusal(p, mixed);
  auto odd =
      fp8(moe_shape(8, 4000, 14336, 2, core::Activation::kSiluGated), core::Quant::kFp8Tensor, 4);
  EXPECT_NE(refusal(odd, sm90_default_config(odd)).find("K = 4000 is not a multiple of 128"),
            std::string::npos);
}

int spill_reports_all_zero(std::string const& log) {
  const std::regex spill(R"((\d+) bytes spill (stores|loads))");
  int lines = 0;
  for (std::sregex_iterator it(log.begin(), log.end(), spill), e; it != e; ++it, ++lines) {
    EXPECT_EQ((*it)[1].str(), "0") << it->str();
  }
  return lines;
}

// Every default fp8 kernel (both modes, gated and not, both block_m) compiles with no spills.
TEST(Sm90Jit, Fp8KernelsCompileWithoutSpillsOrSerialisedWgmma) {
  FreshCubinCache cache("jit_fp8");
  ASSERT_TRUE(cache.ok());
  for (int64_t m : {4, 8192}) {
    for (auto const& p : shapes(m)) {
      auto modules = sm90_gather_modules(p, sm90_default_config(p));
      ASSERT_TRUE(modules.ok()) << modules.error().to_string();
      for (auto const& exprs : *modules) {
        auto mod = compile_module(exprs);
        ASSERT_TRUE(mod.ok()) << mod.error().to_string();
        if (mod->from_cache) continue;  // a module shared with an earlier shape: no ptxas report
        EXPECT_GT(spill_reports_all_zero(mod->ptxas_log), 0) << exprs.front();
        EXPECT_EQ(mod->ptxas_log.find("serialized"), std::string::npos) << mod->ptxas_log;
      }
    }
  }
}

}  // namespace
}  // namespace moetune::kernels::cuda
