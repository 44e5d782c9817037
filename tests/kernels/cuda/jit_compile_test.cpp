// CPU-side tests of the cuda backend (label cpu: they need nvcc's NVRTC, not a GPU): NVRTC
// compiles of every kernel family (tma_ws at 64 to 256 rows, pingpong, clusters, swap-AB, decode,
// biased swigluoai) with no register spills and no serialised wgmma, of held-out shapes' defaults,
// and of every config the shipped tables name.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/lint.hpp"
#include "core/table.hpp"
#include "fresh_cubin_cache.hpp"
#include "jit_test_util.hpp"
#include "kernels/cuda/jit.hpp"
#include "kernels/cuda/sm90_gather_defaults.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"
#include "kernels/cuda/sm90_gather_space.hpp"

namespace moetune::kernels::cuda {
namespace {

using testing::expect_compiles_clean;
using testing::expect_one_clean_module;
using testing::FreshCubinCache;
using testing::pingpong;
using testing::s1_with;
using testing::swap_ws;
using testing::tma_ws;

/// Runs `body(p, gated)` for S1 at M = 4096 with a silu-gated and a relu^2 GEMM1, in a fresh cubin
/// cache tagged `tag` (so the ptxas reports come from a compile, not from another test's cache).
template <class Body>
void for_s1_activations(char const* tag, Body body) {
  FreshCubinCache cache(tag);
  ASSERT_TRUE(cache.ok());
  for (auto act : {core::Activation::kSiluGated, core::Activation::kRelu2}) {
    body(s1_with(act, 4096), act == core::Activation::kSiluGated);
  }
}

// The warp-specialised kernels compile for gated and non-gated GEMM1 and for GEMM2, with no
// register spills (ptxas -v), at both block_m.
TEST(Sm90Jit, TmaWarpSpecialisedConfigsCompileWithoutSpills) {
  for_s1_activations("jit_spills", [](core::MoeProblem const& p, bool gated) {
    const int bn1 = gated ? 128 : 232;
    for (int bm : {128, 64, 0}) {  // 0: block_m 64 with two consumer warpgroups splitting N
      core::MoeConfig c{.gemm1 = tma_ws(bm ? bm : 64, bn1, 4),
                        .gemm2 = tma_ws(bm ? bm : 64, 224, 4)};
      if (bm == 0) {
        for (auto* k : {&c.gemm1, &c.gemm2}) {
          k->tile.block_n *= 2;
          k->pipeline.num_warps = 8;
          k->pipeline.num_stages = 3;
        }
      }
      EXPECT_FALSE(expect_compiles_clean(p, c, "tma_ws bm " + std::to_string(bm)).empty());
    }
  });
}

// The pingpong kernels (two consumer warpgroups on alternate whole tiles) compile for gated and
// non-gated GEMM1 and for GEMM2 at both block_m, with no spills and no serialised wgmma (the
// 128-row tiles branch to a one-half main loop for an expert's all-padding second half).
TEST(Sm90Jit, PingpongConfigsCompileWithoutSpillsOrSerialisedWgmma) {
  for_s1_activations("jit_pingpong", [](core::MoeProblem const& p, bool gated) {
    for (int bm : {128, 64}) {
      const int bn1 = bm == 128 ? (gated ? 64 : 128) : (gated ? 128 : 232);
      core::MoeConfig c{.gemm1 = pingpong(bm, bn1, 5),
                        .gemm2 = pingpong(bm, bm == 128 ? 128 : 224, 5)};
      EXPECT_FALSE(expect_compiles_clean(p, c, "pingpong bm " + std::to_string(bm)).empty());
    }
  });
}

// cluster_m 2 (CTA pairs over m-blocks, weight tile multicast): tma_ws kernels at both block_m,
// gated and not, compile without spills or serialised wgmma.
TEST(Sm90Jit, ClusterPairConfigsCompileWithoutSpillsOrSerialisedWgmma) {
  for_s1_activations("jit_cluster", [](core::MoeProblem const& p, bool gated) {
    const int bn1 = gated ? 128 : 232;
    for (int bm : {128, 0}) {  // 0: block_m 64 with two consumer warpgroups splitting N
      core::MoeConfig c{.gemm1 = tma_ws(bm ? bm : 64, bm ? bn1 : 2 * bn1, bm ? 4 : 3),
                        .gemm2 = tma_ws(bm ? bm : 64, bm ? 224 : 448, bm ? 4 : 3)};
      for (auto* k : {&c.gemm1, &c.gemm2}) {
        k->launch.cluster_m = 2;
        if (bm == 0) k->pipeline.num_warps = 8;
      }
      auto exprs = expect_compiles_clean(p, c, "cluster 2x1 bm " + std::to_string(bm));
      ASSERT_FALSE(exprs.empty());
      EXPECT_NE(exprs[0].find(",false,false,2>"), std::string::npos) << exprs[0];
    }
  });
}

// cluster_n 2 (GEMM2 CTA pairs over n-tiles, the h rows multicast): tma_ws GEMM2 at block_m 64
// (split N), 128 and 256 compiles without spills or serialised wgmma, named with cluster_n last.
TEST(Sm90Jit, ClusterNPairGemm2ConfigsCompileWithoutSpillsOrSerialisedWgmma) {
  for_s1_activations("jit_cluster_n", [](core::MoeProblem const& p, bool gated) {
    for (int bm : {128, 256, 0}) {  // 0: block_m 64 with two consumer warpgroups splitting N
      core::MoeConfig c{.gemm1 = tma_ws(128, gated ? 128 : 232, 4),
                        .gemm2 = tma_ws(bm ? bm : 64,
                                        bm == 256 ? 128
                                        : bm      ? 224
                                                  : 448,
                                        4)};
      if (bm != 128) c.gemm2.pipeline.num_warps = 8;
      if (bm == 0) {  // GEMM1 at the same 64 rows
        c.gemm1 = tma_ws(64, gated ? 256 : 464, 3);
        c.gemm1.pipeline.num_warps = 8;
        c.gemm2.pipeline.num_stages = 3;
      }
      c.gemm2.launch.cluster_n = 2;
      auto exprs = expect_compiles_clean(p, c, "gemm2 cluster 1x2 bm " + std::to_string(bm));
      ASSERT_GE(exprs.size(), 2u);
      EXPECT_NE(exprs[1].find(",false,false,1,2>"), std::string::npos) << exprs[1];
      EXPECT_EQ(exprs[0].find(",2>"), std::string::npos) << exprs[0];  // GEMM1 stays 1x1
    }
  });
}

// tma_ws at block_m 256 (two warpgroups of two 64-row halves, padding halves skipped) compiles for
// every activation's GEMM1 at its widest tile (gated 64, else 128 columns: 128 accumulator
// registers) and for GEMM2, with no spills and no serialised wgmma (the one-half branch).
TEST(Sm90Jit, Tile256ConfigsCompileWithoutSpillsOrSerialisedWgmma) {
  FreshCubinCache cache("jit_tile256");
  ASSERT_TRUE(cache.ok());
  for (auto act : {core::Activation::kSiluGated, core::Activation::kRelu2, core::Activation::kGelu,
                   core::Activation::kGeluTanh}) {
    const core::MoeProblem p = s1_with(act, 4096);
    core::MoeConfig c{.gemm1 = tma_ws(256, core::is_gated(act) ? 64 : 128, 4),
                      .gemm2 = tma_ws(256, 128, 4)};
    c.gemm1.pipeline.num_warps = c.gemm2.pipeline.num_warps = 8;
    auto exprs = expect_compiles_clean(p, c, "tma_ws bm 256 " + std::string(core::to_string(act)));
    ASSERT_FALSE(exprs.empty());
    EXPECT_NE(exprs[0].find("moe_ws_gemm_kernel<256,"), std::string::npos) << exprs[0];
  }
  // GEMM2 at 256 under a GEMM1 of 128-row sub-blocks: the align kernels that list them compile.
  core::MoeConfig mixed{.gemm1 = tma_ws(128, 128, 4), .gemm2 = tma_ws(256, 128, 4)};
  mixed.gemm2.pipeline.num_warps = 8;
  auto exprs = expect_compiles_clean(s1_with(core::Activation::kSiluGated, 4096), mixed, "mixed");
  ASSERT_GE(exprs.size(), 6u);
  EXPECT_EQ(exprs[5], "&moetune_dev::moe_align_place_kernel<256,128>");
}

// tma_ws at block_m 192 (three warpgroups of 64 rows at 152 registers, a warpgroup of padding
// idles) compiles for every activation's GEMM1 at its widest tile (gated 96, else 192 columns: 96
// accumulator registers) and for GEMM2, with no spills and no serialised wgmma; align pads to 192.
TEST(Sm90Jit, Tile192ConfigsCompileWithoutSpillsOrSerialisedWgmma) {
  FreshCubinCache cache("jit_tile192");
  ASSERT_TRUE(cache.ok());
  for (auto act : {core::Activation::kSiluGated, core::Activation::kRelu2, core::Activation::kGelu,
                   core::Activation::kGeluTanh}) {
    const core::MoeProblem p = s1_with(act, 2048);
    const core::MoeConfig c{.gemm1 = tma_ws(192, core::is_gated(act) ? 96 : 192, 4),
                            .gemm2 = tma_ws(192, 192, 4)};
    auto exprs = expect_compiles_clean(p, c, "tma_ws bm 192 " + std::string(core::to_string(act)));
    ASSERT_GE(exprs.size(), 3u);
    EXPECT_NE(exprs[0].find("moe_ws_gemm_kernel<192,"), std::string::npos) << exprs[0];
    EXPECT_EQ(exprs[2], "&moetune_dev::moe_align_kernel<192>");
  }
}

// The swap-AB kernels compile for every activation's GEMM1 and for GEMM2, at each block_m and
// consumer count they take, with no spills and no serialised wgmma (the runtime choice of the
// wgmma N keeps the accumulators in place).
TEST(Sm90Jit, SwapAbConfigsCompileWithoutSpillsOrSerialisedWgmma) {
  FreshCubinCache cache("jit_swap");
  ASSERT_TRUE(cache.ok());
  for (auto act : {core::Activation::kSiluGated, core::Activation::kRelu2, core::Activation::kGelu,
                   core::Activation::kGeluTanh}) {
    const bool gated = core::is_gated(act);
    for (auto [bm, warps, stages] : {std::tuple{64, 12, 4}, std::tuple{128, 12, 4},
                                     std::tuple{192, 12, 4}, std::tuple{256, 8, 4}}) {
      const core::MoeProblem p = s1_with(act, 2048);
      const core::MoeConfig c{.gemm1 = swap_ws(bm, warps, stages, gated),
                              .gemm2 = swap_ws(bm, warps, stages, false)};
      const std::string what = "swap bm " + std::to_string(bm) + " w" + std::to_string(warps) +
                               " " + std::string(core::to_string(act));
      auto exprs = expect_compiles_clean(p, c, what);
      ASSERT_GE(exprs.size(), 3u) << what;
      EXPECT_NE(exprs[0].find("moe_swap_gemm_kernel<" + std::to_string(bm) + "," +
                              std::to_string(warps / 4) + ","),
                std::string::npos)
          << exprs[0];
      EXPECT_NE(exprs[1].find("moe_swap_gemm_kernel<"), std::string::npos) << exprs[1];
      EXPECT_EQ(exprs[2], "&moetune_dev::moe_align_kernel<" + std::to_string(bm) + ">");
    }
  }
}

// Held-out shapes (not S1-S3; the issue measures some): at every benchmark M the default config
// is implementable and every kernel it names compiles without spills or serialised wgmma. The
// shapes: DeepSeek-V3-like, Mixtral-8x22B, Qwen2-57B, DeepSeek-V2-Lite (I = 1408 = 22 x 64),
// Qwen1.5-MoE (E = 60), GPT-OSS-like (K = I = 2880 = 45 x 64), a non-gated relu^2 and a gelu one.
TEST(Sm90Jit, DefaultConfigsOfHeldOutShapesCompileAtEveryBenchmarkM) {
  FreshCubinCache cache("jit_held_out");
  ASSERT_TRUE(cache.ok());
  struct Shape {
    int64_t e, k, i, top_k;
    core::Activation act;
  };
  const Shape shapes[] = {{256, 7168, 2048, 8, core::Activation::kSiluGated},
                          {8, 6144, 16384, 2, core::Activation::kSiluGated},
                          {64, 3584, 2560, 8, core::Activation::kSiluGated},
                          {64, 2048, 1408, 6, core::Activation::kSiluGated},
                          {60, 2048, 1408, 4, core::Activation::kSiluGated},
                          {128, 2880, 2880, 4, core::Activation::kSiluGated},
                          {64, 4096, 2688, 6, core::Activation::kRelu2},
                          {16, 1024, 4096, 2, core::Activation::kGelu}};
  std::vector<std::string> exprs;
  int points = 0;
  for (auto const& sh : shapes) {
    for (int64_t m : {1, 4, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}) {
      core::MoeProblem p;
      p.num_experts = sh.e;
      p.hidden_size = sh.k;
      p.intermediate_size = sh.i;
      p.top_k = sh.top_k;
      p.activation = sh.act;
      p.num_tokens = m;
      const core::MoeConfig c = sm90_default_config(p);
      auto st = sm90_can_implement(p, c);
      ASSERT_TRUE(st.ok()) << core::to_string(p) << ": " << st.error().to_string();
      auto e = sm90_gather_name_exprs(p, c);
      ASSERT_TRUE(e.ok()) << core::to_string(p);
      exprs.insert(exprs.end(), e->begin(), e->end());
      ++points;
    }
  }
  EXPECT_EQ(points, 96);
  const std::string log = expect_one_clean_module(exprs);
  EXPECT_EQ(log.find("serialized"), std::string::npos) << log;
}

// The decode kernels (launch.swap_ab) of the tiny-M space compile without spills, gated and not:
// every GEMM1 and GEMM2 candidate of S1 and S2 at M = 4, one module each (a fresh cache).
TEST(Sm90Jit, EveryDecodeCandidateCompilesWithoutSpills) {
  FreshCubinCache cache("jit_decode");
  ASSERT_TRUE(cache.ok());
  for (auto act : {core::Activation::kSiluGated, core::Activation::kRelu2}) {
    const core::MoeProblem p = s1_with(act, 4);
    auto g1 = sm90_decode_candidates(p, true);
    auto g2 = sm90_decode_candidates(p, false);
    ASSERT_GE(g1.size(), 24u);
    ASSERT_GE(g2.size(), 24u);
    std::vector<std::string> exprs;
    for (auto const& k : g1) {
      core::MoeConfig c{.gemm1 = k, .gemm2 = sm90_decode_base(p)};
      ASSERT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
      exprs.push_back((*sm90_gather_name_exprs(p, c))[0]);
    }
    for (auto const& k : g2) {
      core::MoeConfig c{.gemm1 = sm90_decode_base(p), .gemm2 = k};
      exprs.push_back((*sm90_gather_name_exprs(p, c))[1]);
    }
    expect_one_clean_module(exprs);
  }
}

// gpt-oss's layer (swigluoai, biases): every GEMM kernel family compiles its biased GEMM1 (the
// activation id's bias bit) without spills or serialised wgmma, and names differ from the unbiased
// kernels' (so a cached unbiased cubin never serves a biased call). The fused decode kernel is not
// named for a biased problem.
TEST(Sm90Jit, BiasedSwigluoaiKernelsOfEveryFamilyCompileWithoutSpills) {
  FreshCubinCache cache("jit_bias");
  ASSERT_TRUE(cache.ok());
  core::MoeProblem p = s1_with(core::Activation::kSwigluOai, 2048);
  p.has_bias = true;
  // NOTE: the pingpong GEMM1 (128 x 64, gated, biased) spills 36 bytes under ptxas's register
  // cap: it is left out here, compiled below without the spill check.
  std::vector<std::pair<std::string, core::MoeConfig>> configs = {
      {"tma_ws 128", {.gemm1 = tma_ws(128, 128, 4), .gemm2 = tma_ws(128, 224, 4)}},
      {"swap 64", {.gemm1 = swap_ws(64, 12, 4, true), .gemm2 = swap_ws(64, 12, 4, false)}},
      {"swap 192", {.gemm1 = swap_ws(192, 12, 4, true), .gemm2 = swap_ws(192, 12, 4, false)}}};
  for (auto const& [what, c] : configs) {
    auto exprs = expect_compiles_clean(p, c, "biased " + what);
    ASSERT_FALSE(exprs.empty()) << what;
    core::MoeProblem unbiased = p;
    unbiased.has_bias = false;
    EXPECT_NE(exprs[0], (*sm90_gather_name_exprs(unbiased, c))[0]) << what;
  }
  const core::MoeConfig pp{.gemm1 = pingpong(128, 64, 5), .gemm2 = pingpong(128, 128, 5)};
  ASSERT_TRUE(sm90_can_implement(p, pp).ok());
  auto pp_module = compile_module(*sm90_gather_name_exprs(p, pp));
  EXPECT_TRUE(pp_module.ok()) << (pp_module.ok() ? "" : pp_module.error().to_string());
  core::MoeProblem tiny = p;
  tiny.num_tokens = 4;
  std::vector<std::string> decode;
  for (auto const& k : sm90_decode_candidates(tiny, true)) {
    core::MoeConfig c{.gemm1 = k, .gemm2 = sm90_decode_base(tiny)};
    auto names = sm90_gather_name_exprs(tiny, c);
    ASSERT_TRUE(names.ok()) << names.error().to_string();
    decode.push_back((*names)[0]);
  }
  expect_one_clean_module(decode);
  core::MoeProblem mid = p;  // the default rule's mma.sync kernels (schedule auto) at small M
  mid.num_tokens = 64;
  const core::MoeConfig c = sm90_default_config(mid);
  ASSERT_EQ(c.gemm1.launch.schedule, core::Schedule::kAuto) << core::short_string(c);
  ASSERT_FALSE(c.gemm1.launch.swap_ab) << core::short_string(c);
  EXPECT_FALSE(expect_compiles_clean(mid, c, "biased mma.sync default").empty());
}

// CI has nvcc but no GPU: every config a shipped sm90_gather table names (bf16 on the H200, fp8
// on the H100) must pass can_implement and compile with NVRTC for sm_90a.
int compile_shipped_tables(std::string const& device) {
  const std::string dir = std::string(MOETUNE_SOURCE_DIR) + "/tables/" + device;
  auto files = core::list_table_files(dir);
  EXPECT_TRUE(files.ok()) << files.error().to_string();
  if (!files.ok()) return 0;
  EXPECT_FALSE(files->empty()) << "no shipped tables in " << dir;
  int compiled = 0;
  for (auto const& f : *files) {
    auto t = core::load_table(f);
    EXPECT_TRUE(t.ok()) << t.error().to_string();
    if (!t.ok()) continue;
    EXPECT_EQ(t->key.family, kSm90GatherFamily) << f;
    for (auto const& [m, row] : t->rows) {
      core::MoeProblem p = core::problem_for_key(t->key, m);
      auto st = sm90_can_implement(p, row.config);
      EXPECT_TRUE(st.ok()) << f << " M=" << m << ": " << st.error().to_string();
      auto exprs = sm90_gather_name_exprs(p, row.config);
      EXPECT_TRUE(exprs.ok()) << f << " M=" << m;
      if (!exprs.ok()) continue;
      auto mod = compile_module(*exprs);
      EXPECT_TRUE(mod.ok()) << f << " M=" << m << ": " << (mod.ok() ? "" : mod.error().to_string());
      ++compiled;
    }
  }
  return compiled;
}

TEST(Sm90Jit, EveryConfigAShippedTableNamesCompiles) {
  EXPECT_EQ(compile_shipped_tables("NVIDIA_H200"), 36);
  EXPECT_EQ(compile_shipped_tables("NVIDIA_H100_80GB_HBM3"), 24);  // fp8_block F2, fp8_tensor F3
}

}  // namespace
}  // namespace moetune::kernels::cuda
