// run_checked (what `moetune run` serves) on fp8 layers on the cuda backend: generated e4m3
// weights with block scales orders of magnitude apart (or per-tensor scales), the runner's own
// launch on device buffers, every element against the fp64 reference that repeats the kernels'
// quantisation, at M = 0, 1, 37 and 300 (label gpu; skips with the reason where no sm_90 GPU is
// visible). The checker's negative twin (a wrong block scale fails) is the CPU test
// tests/kernels/cpu/fp8_layer_test.cpp.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/temp_dir.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda_factory.hpp"
#include "kernels/testbed.hpp"
#include "moetune/moe_runner.hpp"
#include "runtime/checked_run.hpp"

namespace moetune {
namespace {

TEST(CheckedRunCudaFp8, BlockAndTensorLayersPassTheirReferenceAtEveryM) {
  if (!kernels::cuda_device_present()) {
    GTEST_SKIP() << "no CUDA device visible: the cuda checked-run tests run on the device machine";
  }
  auto dev = kernels::cuda::query_cuda_device();
  if (!dev.ok() || dev->arch.rfind("sm_90", 0) != 0) {
    GTEST_SKIP() << "the fp8 kernels need an sm_90 GPU; this one is "
                 << (dev.ok() ? dev->arch : dev.error().to_string());
  }
  std::string const dir = moetune::testing::unique_temp_dir("checked_run_fp8");
  for (char const* spec : {"E=8,K=256,I=256,topk=2,act=silu,dtype=bf16,quant=fp8_block",
                           "E=8,K=256,I=256,topk=2,act=silu,dtype=bf16,quant=fp8_tensor",
                           "E=16,K=384,I=128,topk=3,act=relu2,dtype=bf16,quant=fp8_block"}) {
    RunnerOptions o;
    o.cache_path = dir + "/knobs.json";
    o.max_tokens = 512;
    auto r = MoeRunner::create(*core::parse_problem_spec(spec), "cuda", o);
    ASSERT_TRUE(r.ok()) << spec << ": " << r.error().to_string();
    kernels::Tolerance const tol = kernels::tolerance_for((*r)->problem());
    for (int64_t m : {0, 1, 37, 300}) {
      auto run = runtime::run_checked(**r, core::RoutingProfile{}, m, Knobs::none(), 7);
      ASSERT_TRUE(run.ok()) << spec << " M=" << m << ": " << run.error().to_string();
      EXPECT_TRUE(run->passed) << spec << " M=" << m << " under "
                               << core::short_string(run->choice.config) << ": rel_l2 "
                               << run->check.rel_l2_error << " (tolerance " << tol.rel_l2
                               << "), first bad " << run->check.first_bad;
      if (m > 0) {
        EXPECT_GT(run->check.rel_l2_error, 0.0) << "an exact match hides nothing";
      }
      std::printf("%s M=%lld: rel_l2 %.3g, %s\n", spec, static_cast<long long>(m),
                  run->check.rel_l2_error, core::short_string(run->choice.config).c_str());
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace moetune
