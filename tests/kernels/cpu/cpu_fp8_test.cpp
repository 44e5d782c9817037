// cpu_tiled on fp8 layers (problem quant fp8_block / fp8_tensor) through the cpu testbed: every
// element against the fp64 reference that repeats the GPU kernels' quantisation
// (reference_fp8_moe), over token counts, activations, tiles, split-K and thread counts; the same
// bits whatever the threads; a wrong block scale is caught (negative twin); what it refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cpu_test_util.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/cpu_moe.hpp"
#include "kernels/cpu/cpu_testbed.hpp"
#include "kernels/cpu/output_check.hpp"

namespace moetune::kernels::cpu {
namespace {

core::MoeProblem fp8_problem(core::Quant q, core::Activation act, int64_t m) {
  core::MoeProblem p = testing::small_problem(m, 6, 256, 128, 2, act);
  p.quant = q;
  return p;
}

core::MoeConfig tiled(int block_m, int block_n, int block_k, int split_k, int threads) {
  core::KernelConfig k;
  k.tile = {.block_m = block_m, .block_n = block_n, .block_k = block_k, .group_m = 1};
  k.pipeline.split_k = split_k;
  k.launch.num_threads = threads;
  return core::MoeConfig{.gemm1 = k, .gemm2 = k};
}

TEST(CpuFp8, LayersMatchTheirReferenceAtEveryMAndConfig) {
  CpuTestbed tb;
  for (core::Quant q : {core::Quant::kFp8Block, core::Quant::kFp8Tensor}) {
    for (core::Activation act : {core::Activation::kSiluGated, core::Activation::kRelu2}) {
      for (int64_t m : {0, 1, 7, 64, 300}) {
        core::MoeProblem const p = fp8_problem(q, act, m);
        ASSERT_TRUE(tb.prepare(p, core::RoutingProfile{}, 11).ok());
        for (core::MoeConfig const& c :
             {cpu_tiled_default_config(p), tiled(16, 32, 64, 2, 3), tiled(8, 64, 128, 1, 1)}) {
          auto r = tb.check(c);
          ASSERT_TRUE(r.ok()) << r.error().to_string();
          EXPECT_TRUE(check_passed(*r, tolerance_for(p)))
              << core::to_string(q) << " " << core::to_string(act) << " M=" << m << " "
              << core::short_string(c) << ": rel_l2 " << r->rel_l2_error;
          if (m > 0) {
            EXPECT_LT(r->rel_l2_error, 1e-2);  // the same quantisation on both sides
          }
        }
      }
    }
  }
}

TEST(CpuFp8, BitsDoNotDependOnThreads) {
  CpuTestbed tb;
  core::MoeProblem const p = fp8_problem(core::Quant::kFp8Block, core::Activation::kSiluGated, 97);
  ASSERT_TRUE(tb.prepare(p, core::RoutingProfile{}, 5).ok());
  auto one = tb.check(tiled(16, 64, 64, 1, 1));
  auto four = tb.check(tiled(16, 64, 64, 1, 4));
  ASSERT_TRUE(one.ok() && four.ok());
  EXPECT_EQ(one->digest, four->digest);
}

TEST(CpuFp8, AWrongBlockScaleIsCaught) {
  // Negative twin: the layer run with one w2 block scale 10x off fails the check.
  CpuTestbed tb;
  core::MoeProblem const p = fp8_problem(core::Quant::kFp8Block, core::Activation::kSiluGated, 64);
  ASSERT_TRUE(tb.prepare(p, core::RoutingProfile{}, 3).ok());
  auto layer = generate_fp8_layer(p, 3 ^ kFp8LayerStream);  // the testbed's draw
  ASSERT_TRUE(layer.ok());
  std::vector<float> w2_scale = layer->w2_scale;
  for (size_t i = 0; i < w2_scale.size(); i += 2) w2_scale[i] *= 10.0f;
  MoeHostData const& d = tb.data();
  std::vector<uint16_t> out(static_cast<size_t>(p.num_tokens * p.hidden_size));
  CpuMoeArgs args{.x = d.x_data(),
                  .topk_ids = d.routing.topk_ids.data(),
                  .topk_weights = d.routing.topk_weights.data(),
                  .w1 = layer->w1.data(),
                  .w2 = layer->w2.data(),
                  .out = out.data(),
                  .w1_scale = layer->w1_scale.data(),
                  .w2_scale = w2_scale.data()};
  CpuMoeWorkspace ws;
  ASSERT_TRUE(run_cpu_moe(p, cpu_tiled_default_config(p), args, ws).ok());
  auto ref = tb.reference();
  ASSERT_TRUE(ref.ok());
  CheckResult const r = check_output(p.dtype, out.data(), *ref, tolerance_for(p));
  EXPECT_FALSE(check_passed(r, tolerance_for(p))) << "rel_l2 " << r.rel_l2_error;
  // The same args with the right scales pass: the twin differs only in the scale.
  args.w2_scale = layer->w2_scale.data();
  ASSERT_TRUE(run_cpu_moe(p, cpu_tiled_default_config(p), args, ws).ok());
  EXPECT_TRUE(
      check_passed(check_output(p.dtype, out.data(), *ref, tolerance_for(p)), tolerance_for(p)));
}

TEST(CpuFp8, RefusesWhatItCannotRunWithTheReason) {
  core::MoeProblem p = fp8_problem(core::Quant::kFp8Tensor, core::Activation::kSiluGated, 4);
  p.intermediate_size = 96;
  auto s = cpu_tiled_can_implement(p, cpu_tiled_default_config(p));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("needs dtype bf16 and K and I multiples of 128"),
            std::string::npos)
      << s.error().message;
  // A missing static scale of a per-tensor layer is named.
  core::MoeProblem const t = fp8_problem(core::Quant::kFp8Tensor, core::Activation::kSiluGated, 2);
  auto layer = generate_fp8_layer(t, 1);
  ASSERT_TRUE(layer.ok());
  std::vector<uint16_t> x(2 * 256, 0), out(2 * 256);
  std::vector<int32_t> ids{0, 1, 2, 3};
  std::vector<float> w(4, 0.5f);
  CpuMoeArgs args{.x = x.data(),
                  .topk_ids = ids.data(),
                  .topk_weights = w.data(),
                  .w1 = layer->w1.data(),
                  .w2 = layer->w2.data(),
                  .out = out.data(),
                  .w1_scale = layer->w1_scale.data(),
                  .w2_scale = layer->w2_scale.data()};
  CpuMoeWorkspace ws;
  auto r = run_cpu_moe(t, cpu_tiled_default_config(t), args, ws);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "quant fp8_tensor needs w1_scale and w2_scale, a1_scale and a2_scale; one is null: "
            "pass every scale of the fp8 layer");
  // A layer whose fp32 copies outgrow the host is refused before anything is allocated (3 TB
  // here); nothing past the routing is read, so one-element stand-ins do.
  core::MoeProblem huge = fp8_problem(core::Quant::kFp8Block, core::Activation::kSiluGated, 2);
  huge.num_experts = 1024;
  huge.hidden_size = huge.intermediate_size = 16384;
  float scale = 1.0f;
  args.w1_scale = args.w2_scale = &scale;
  auto big = run_cpu_moe(huge, cpu_tiled_default_config(huge), args, ws);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("the fp32 copies of an fp8 layer"), std::string::npos)
      << big.error().message;
}

}  // namespace
}  // namespace moetune::kernels::cpu
