// The cuda worker's parallel precompile without a GPU (NVRTC only; skips when the cuda backend is
// not built): concurrent compiles of distinct configs all land in the cubin cache, a config
// sharing a module is compiled once, an infeasible one gets its can_implement reason, and the
// process umask survives the concurrent cache writes.
#include <sys/stat.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#if MOETUNE_HAVE_CUDA
#include "core/scoped_env.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_testbed.hpp"
#include "kernels/cuda/jit.hpp"
#include "kernels/cuda/sm90_gather_defaults.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"
#include "kernels/cuda/sm90_gather_launch.hpp"
#endif

namespace moetune::tuner {
namespace {

#if MOETUNE_HAVE_CUDA
core::MoeProblem small_problem() {
  core::MoeProblem p;
  p.num_tokens = 64;
  p.hidden_size = 1024;
  p.intermediate_size = 512;
  p.num_experts = 16;
  p.top_k = 2;
  p.activation = core::Activation::kSiluGated;
  p.arch = "sm_90a";
  return p;
}
#endif

TEST(Precompile, ConcurrentNvrtcCompilesFillTheCacheOnceEach) {
#if !MOETUNE_HAVE_CUDA
  GTEST_SKIP() << "the cuda backend is not built (no nvcc)";
#else
  std::string dir = (std::filesystem::temp_directory_path() / "moetune-precompile-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  moetune::testing::ScopedEnv cache_dir("MOETUNE_CACHE_DIR", dir.c_str());
  core::MoeProblem const p = small_problem();
  // Three configs with distinct GEMM1s from the family's own list at the default block_m and the
  // same GEMM2.
  core::MoeConfig const base = kernels::cuda::sm90_default_config(p);
  auto const gemm1 = kernels::cuda::sm90_gemm_candidates(p, base.gemm1.tile.block_m, true);
  std::vector<core::MoeConfig> configs;
  for (core::KernelConfig const& k : gemm1) {
    core::MoeConfig c{k, base.gemm2};
    if (configs.size() < 3 && kernels::cuda::sm90_can_implement(p, c).ok()) configs.push_back(c);
  }
  ASSERT_EQ(configs.size(), 3u);
  configs.push_back(configs[1]);  // the same module again
  core::MoeConfig bad = base;
  bad.gemm2.tile.block_m = base.gemm1.tile.block_m * 2;
  configs.push_back(bad);

  mode_t const mask = ::umask(022);
  auto const out = kernels::cuda::precompile_sm90_gather(p, configs, {}, 3);
  mode_t const after = ::umask(mask);
  EXPECT_EQ(after, mode_t{022});  // concurrent cache writes left the umask as it was
  ASSERT_EQ(out.size(), configs.size());
  for (size_t i = 0; i < 4; ++i)
    EXPECT_TRUE(out[i].ok()) << i << ": " << out[i].error().to_string();
  ASSERT_FALSE(out[4].ok());
  EXPECT_NE(out[4].error().message.find("block_m"), std::string::npos) << out[4].error().message;

  int files = 0;
  for (auto const& e : std::filesystem::directory_iterator(dir + "/cubin")) {
    files += e.path().extension() == ".cubin";
  }
  // One module per GEMM kernel: three GEMM1 modules, and the GEMM2 and align + combine modules
  // the three share, once each.
  EXPECT_EQ(files, 5);
  for (size_t i = 0; i < 3; ++i) {  // what a run loads afterwards comes from the cache
    auto modules = kernels::cuda::sm90_gather_modules(p, configs[i]);
    ASSERT_TRUE(modules.ok());
    ASSERT_EQ(modules->size(), 3u);
    for (auto const& exprs : *modules) {
      auto m = kernels::cuda::compile_module(exprs, p.arch);
      ASSERT_TRUE(m.ok()) << m.error().to_string();
      EXPECT_TRUE(m->from_cache) << i << ": " << exprs.front();
    }
  }
  std::filesystem::remove_all(dir);
#endif
}

}  // namespace
}  // namespace moetune::tuner
