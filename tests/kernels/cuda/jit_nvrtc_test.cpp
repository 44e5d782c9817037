// CPU-side tests of the cuda backend's NVRTC path (label cpu: they need nvcc's NVRTC, not a GPU):
// the cubin cache (a second compile reads it; threads compiling one module run NVRTC once),
// $MOETUNE_DEV_NVRTC_DEFINES (parsed into -D options, in the compile and its cache key), and
// NVRTC's error for an instantiation the kernels refuse.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "fresh_cubin_cache.hpp"
#include "jit_test_util.hpp"
#include "kernels/cuda/jit.hpp"
#include "kernels/cuda/sm90_gather_defaults.hpp"
#include "kernels/cuda/sm90_gather_load.hpp"

namespace moetune::kernels::cuda {
namespace {

using testing::expect_one_clean_module;
using testing::FreshCubinCache;
using testing::s1;
using testing::s1_with;
using testing::ScopedDefines;
using testing::swap_ws;
using testing::tma_ws;

TEST(Sm90Jit, CompilesTheDefaultConfigWithoutAGpu) {
  core::MoeProblem p = s1();
  p.num_tokens = 64;
  auto exprs = sm90_gather_name_exprs(p, sm90_default_config(p));
  ASSERT_TRUE(exprs.ok());
  auto m = compile_module(*exprs);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_GT(m->cubin.size(), 1000u);
  for (auto const& e : *exprs) EXPECT_FALSE(m->lowered[e].empty()) << e;
  auto again = compile_module(*exprs);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->from_cache);
  EXPECT_EQ(again->cubin, m->cubin);
}

// Threads compiling the same module at once (a pool over configs that share a GEMM module) run
// NVRTC once: the others wait and read the cache file the first one wrote.
TEST(Sm90Jit, ConcurrentCompilesOfOneModuleRunNvrtcOnce) {
  FreshCubinCache cache("jit_same_module");
  ASSERT_TRUE(cache.ok());
  core::MoeProblem p = s1();
  auto modules = sm90_gather_modules(p, sm90_default_config(p));
  ASSERT_TRUE(modules.ok());
  std::vector<std::string> const exprs = modules->front();  // the GEMM1 module
  std::vector<core::Result<JitModule>> out(4,
                                           core::make_error(core::ErrorCode::kInternal, "t", ""));
  std::vector<std::thread> pool;
  for (size_t i = 0; i < out.size(); ++i) {
    pool.emplace_back([&, i] { out[i] = compile_module(exprs); });
  }
  for (auto& t : pool) t.join();
  int compiled = 0;
  for (auto const& m : out) {
    ASSERT_TRUE(m.ok()) << m.error().to_string();
    compiled += m->from_cache ? 0 : 1;
    EXPECT_EQ(m->cubin, out[0]->cubin);
  }
  EXPECT_EQ(compiled, 1) << "each thread ran NVRTC on the same module";
}

// $MOETUNE_DEV_NVRTC_DEFINES: NAME or NAME=VALUE tokens become -D options; anything that could
// carry another option is refused, naming the token.
TEST(Sm90Jit, DevNvrtcDefinesBecomeDashDOptionsAndAnythingElseIsRefused) {
  auto none = dev_nvrtc_defines(nullptr);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  auto blank = dev_nvrtc_defines("  ");
  ASSERT_TRUE(blank.ok());
  EXPECT_TRUE(blank->empty());
  auto two = dev_nvrtc_defines(" MOETUNE_TMA_WEIGHT_L2=1  FLAG_2 V=1.5e-3 ");
  ASSERT_TRUE(two.ok()) << two.error().to_string();
  EXPECT_EQ(*two,
            (std::vector<std::string>{"-DMOETUNE_TMA_WEIGHT_L2=1", "-DFLAG_2", "-DV=1.5e-3"}));
  for (const char* bad : {"-O3", "A=1;rm", "A=", "1A", "A B=$(x)", "=1", "A=\"1\""}) {
    auto r = dev_nvrtc_defines(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, core::ErrorCode::kInvalidArgument) << bad;
    EXPECT_EQ(r.error().where, "MOETUNE_DEV_NVRTC_DEFINES");
    EXPECT_NE(r.error().message.find("is not NAME or NAME=VALUE"), std::string::npos)
        << r.error().message;
  }
}

// The defines reach NVRTC (an out-of-range L2 hint trips sm90_tma.cuh's static_assert) and the
// cache key (the same module with a define is another cubin file); a refused value fails the
// compile with the knob's error. The L2-hinted loads (cp.async gather, 2-D, 5-D and multicast TMA)
// compile without spills in the kernels that use them.
TEST(Sm90Jit, DevNvrtcDefinesReachTheCompileAndItsCacheKey) {
  FreshCubinCache cache("jit_dev_defines");
  ASSERT_TRUE(cache.ok());
  const std::vector<std::string> align = {"&moetune_dev::moe_align_kernel<128>"};
  auto plain = compile_module(align);
  ASSERT_TRUE(plain.ok()) << plain.error().to_string();
  {
    ScopedDefines d("MOETUNE_TMA_WEIGHT_L2=1 MOETUNE_TMA_ACT_L2=2");
    auto hinted = compile_module(align);
    ASSERT_TRUE(hinted.ok()) << hinted.error().to_string();
    EXPECT_FALSE(hinted->from_cache);
    EXPECT_NE(hinted->cache_path, plain->cache_path);
    core::MoeProblem p = s1_with(core::Activation::kSiluGated, 4096);
    core::MoeConfig ws{.gemm1 = tma_ws(128, 128, 4), .gemm2 = tma_ws(128, 224, 4)};
    ws.gemm1.launch.cluster_m = 2;
    ws.gemm2.launch.cluster_n = 2;
    const core::MoeConfig swap{.gemm1 = swap_ws(128, 12, 4, true),
                               .gemm2 = swap_ws(128, 12, 4, false)};
    for (auto const& c : {ws, swap}) {
      auto exprs = sm90_gather_name_exprs(p, c);
      ASSERT_TRUE(exprs.ok()) << exprs.error().to_string();
      exprs->resize(2);  // the two GEMMs
      expect_one_clean_module(*exprs);
    }
  }
  {
    ScopedDefines d("MOETUNE_TMA_WEIGHT_L2=3");
    auto refused = compile_module(align);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("0 none, 1 evict_first, 2 evict_last"),
              std::string::npos)
        << refused.error().message;
  }
  {
    ScopedDefines d("-O0");
    auto refused = compile_module(align);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, core::ErrorCode::kInvalidArgument);
  }
}

TEST(Sm90Jit, ReportsACompileErrorForAnInvalidInstantiation) {
  // Negative twin: an instantiation the static_asserts reject must fail with NVRTC's reason.
  auto m = compile_module({"&moetune_dev::moe_gemm_kernel<64,64,48,2,2,3,1,0,true,0>"});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("block_k must be 32, 64 or 128"), std::string::npos)
      << m.error().message;
}

}  // namespace
}  // namespace moetune::kernels::cuda
