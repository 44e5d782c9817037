// CPU-side tests of the cuda backend (label cpu: they need nvcc's NVRTC, not a GPU):
// can_implement reasons, the default config, and NVRTC compiles of configs tables name.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <regex>
#include <thread>
#include <tuple>

#include "../../core/temp_dir.hpp"

#include "fresh_cubin_cache.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/jit.hpp"
#include "kernels/cuda/sm90_decode_geometry.hpp"
#include "kernels/cuda/sm90_gather_defaults.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"
#include "kernels/cuda/sm90_gather_launch.hpp"
#include "kernels/cuda/sm90_gather_space.hpp"
#include "kernels/cuda/sm90_swap_geometry.hpp"
#include "moe_shape.hpp"

namespace moetune::kernels::cuda {
namespace {

using testing::FreshCubinCache;
using testing::moe_shape;

// Problems here run M = 64 unless a test says otherwise (past the decode kernels' M: their default
// starts at M <= 4).
core::MoeProblem s1() { return moe_shape(128, 2688, 1856, 6, core::Activation::kRelu2, 64); }

/// S1's sizes with another activation and M.
core::MoeProblem s1_with(core::Activation act, int64_t m) {
  core::MoeProblem p = s1();
  p.activation = act;
  p.num_tokens = m;
  return p;
}

/// can_implement refuses `c` for `p` with a message containing `text`; returns the message ("" when
/// it was accepted, which fails the test).
std::string expect_refused(core::MoeProblem const& p, core::MoeConfig const& c,
                           std::string const& text) {
  auto st = sm90_can_implement(p, c);
  EXPECT_FALSE(st.ok()) << "accepted: " << core::short_string(c);
  if (st.ok()) return "";
  EXPECT_NE(st.error().message.find(text), std::string::npos) << st.error().message;
  return st.error().message;
}

TEST(Sm90Geometry, RejectsBlockKThatDoesNotDivideK) {
  core::MoeConfig c = sm90_default_config(s1());
  c.gemm2.tile.block_k = 128;
  auto st = sm90_can_implement(s1(), c);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "gemm2.tile.block_k = 128 does not divide I = 1856; use a block_k that divides it (32 "
            "always does when it is a multiple of 32)");
}

TEST(Sm90Geometry, RejectsDifferentBlockMAcrossGemms) {
  core::MoeConfig c = sm90_default_config(s1());
  c.gemm2.tile.block_m = c.gemm1.tile.block_m * 2;
  auto st = sm90_can_implement(s1(), c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("must be equal"), std::string::npos);
}

TEST(Sm90Geometry, RejectsKnobsTheFamilyLacksWithTheirNames) {
  core::MoeConfig c = sm90_default_config(s1());
  c.gemm2.launch.swap_ab = true;
  EXPECT_NE(sm90_can_implement(s1(), c).error().message.find("gemm2.launch.swap_ab"),
            std::string::npos);
  c = sm90_default_config(s1());
  c.gemm1.pipeline.split_k = 2;
  EXPECT_NE(sm90_can_implement(s1(), c).error().message.find("split_k"), std::string::npos);
  c = sm90_default_config(s1());
  c.gemm1.pipeline.num_stages = 8;
  c.gemm1.tile = {.block_m = 64, .block_n = 128, .block_k = 128, .group_m = 1};
  c.gemm1.pipeline.num_warps = 4;
  c.gemm2.tile.block_m = 64;
  EXPECT_NE(sm90_can_implement(s1(), c).error().message.find("shared memory"), std::string::npos);
}

TEST(Sm90Geometry, DefaultConfigIsImplementableForManyShapesAndM) {
  for (int64_t e : {8, 60, 128, 256}) {
    for (int64_t k : {256, 2048, 2688, 4096}) {
      for (int64_t i : {64, 768, 1856, 14336}) {
        for (int64_t m : {0, 1, 5, 64, 1000, 16384}) {
          core::MoeProblem p = s1();
          p.num_experts = e;
          p.hidden_size = k;
          p.intermediate_size = i;
          p.num_tokens = m;
          p.top_k = std::min<int64_t>(e, 8);
          auto st = sm90_can_implement(p, sm90_default_config(p));
          EXPECT_TRUE(st.ok()) << core::to_string(p) << ": " << st.error().to_string();
        }
      }
    }
  }
}

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

/// Every "N bytes spill stores/loads" line of a ptxas -v log says 0; returns how many there were.
int expect_no_spills(std::string const& ptxas_log) {
  const std::regex spill(R"((\d+) bytes spill (stores|loads))");
  int lines = 0;
  for (std::sregex_iterator it(ptxas_log.begin(), ptxas_log.end(), spill), e; it != e;
       ++it, ++lines) {
    EXPECT_EQ((*it)[1].str(), "0") << ptxas_log;
  }
  return lines;
}

/// Compiles the distinct kernels of `exprs` in one module: it compiles and every kernel has a ptxas
/// -v report without spills. Returns the ptxas log ("" when the compile failed).
std::string expect_one_clean_module(std::vector<std::string> exprs) {
  std::sort(exprs.begin(), exprs.end());
  exprs.erase(std::unique(exprs.begin(), exprs.end()), exprs.end());
  auto m = compile_module(exprs);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  if (!m.ok()) return "";
  EXPECT_GE(expect_no_spills(m->ptxas_log), static_cast<int>(exprs.size()))
      << "no ptxas -v report per kernel";
  return m->ptxas_log;
}

core::KernelConfig tma_ws(int bm, int bn, int stages) {
  core::KernelConfig k;
  k.tile = {.block_m = bm, .block_n = bn, .block_k = 64, .group_m = 8};
  k.pipeline = {.num_warps = bm / 16, .num_stages = stages, .split_k = 1};
  k.launch.schedule = core::Schedule::kTmaWarpSpecialized;
  return k;
}

/// Compiles `c`'s module (in the current cubin cache) and checks it: can_implement passes, NVRTC
/// compiles it, ptxas -v reports a kernel with no spills, and no wgmma is serialised. Returns the
/// name expressions (empty when it could not get that far).
std::vector<std::string> expect_compiles_clean(core::MoeProblem const& p, core::MoeConfig const& c,
                                               std::string const& what) {
  auto st = sm90_can_implement(p, c);
  EXPECT_TRUE(st.ok()) << what << ": " << (st.ok() ? std::string() : st.error().to_string());
  if (!st.ok()) return {};
  auto exprs = sm90_gather_name_exprs(p, c);
  EXPECT_TRUE(exprs.ok()) << what;
  if (!exprs.ok()) return {};
  auto m = compile_module(*exprs);
  EXPECT_TRUE(m.ok()) << what << ": " << (m.ok() ? std::string() : m.error().to_string());
  if (!m.ok()) return *exprs;
  EXPECT_GT(expect_no_spills(m->ptxas_log), 0) << what << ": no ptxas -v report";
  // ptxas serialises wgmma (waits after every instruction) when it cannot keep the
  // accumulators in place; that costs a large part of the main loop's throughput.
  EXPECT_EQ(m->ptxas_log.find("serialized"), std::string::npos) << what << ": " << m->ptxas_log;
  return *exprs;
}

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

core::KernelConfig pingpong(int bm, int bn, int stages) {
  core::KernelConfig k = tma_ws(bm, bn, stages);
  k.pipeline.num_warps = 8;
  k.launch.schedule = core::Schedule::kPingpong;
  return k;
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

// can_implement of block_m 256: tma_ws only, 8 warps, split_k 1, cluster 1x1, <= 128 accumulator
// registers; each refusal names the field.
TEST(Sm90Geometry, Tile256IsTmaWsWithTwoWarpgroupsOfTwoHalves) {
  core::MoeProblem p = s1_with(core::Activation::kSiluGated, 4096);
  p.intermediate_size = 1792;  // 28 k-tiles: split 2 would divide them
  core::MoeConfig c{.gemm1 = tma_ws(256, 64, 4), .gemm2 = tma_ws(256, 128, 4)};
  c.gemm1.pipeline.num_warps = c.gemm2.pipeline.num_warps = 8;
  ASSERT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
  auto g = gemm_geometry(p, c.gemm1, true);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->threads(), 384);
  EXPECT_EQ(g->acc_registers(), 128);
  EXPECT_EQ(g->smem_bytes(), 4 * (256 + 128) * 128 + 1024);
  auto bad = c;  // negative twins, one field each
  bad.gemm1.tile.block_n = 128;
  expect_refused(p, bad, "256 accumulator registers");
  bad = c;
  bad.gemm2.pipeline.num_warps = 16;
  expect_refused(p, bad, "num_warps 16");
  bad = c;
  bad.gemm2.pipeline.split_k = 2;
  expect_refused(p, bad, "split_k 2");
  bad = c;
  bad.gemm2.launch.cluster_m = bad.gemm1.launch.cluster_m = 2;
  expect_refused(p, bad, "cluster_m 2");
  for (auto sched : {core::Schedule::kCooperative, core::Schedule::kPingpong}) {
    bad = c;
    bad.gemm2.launch.schedule = sched;
    expect_refused(p, bad, "tile.block_m = 256 with schedule");
  }
  bad = c;
  bad.gemm1.pipeline.num_stages = bad.gemm2.pipeline.num_stages = 5;
  expect_refused(p, bad, "shared memory");
  // GEMM1 may walk GEMM2's 256-row blocks in tma_ws sub-blocks of 128 or 64 rows (cluster 1x1);
  // the align step pads to 256 and lists GEMM1's 128-row sub-blocks that hold pairs.
  auto mixed = c;
  mixed.gemm1 = tma_ws(128, 128, 4);
  ASSERT_TRUE(sm90_can_implement(p, mixed).ok())
      << sm90_can_implement(p, mixed).error().to_string();
  auto exprs = sm90_gather_name_exprs(p, mixed);
  ASSERT_TRUE(exprs.ok());
  EXPECT_EQ((*exprs)[2], "&moetune_dev::moe_align_kernel<256,128>");
  // GEMM1 at 256 reads x from a copy in sorted-row order (2 bytes x K per padded row), which
  // outweighs the sub-block list of GEMM1 at 128.
  EXPECT_GT(sm90_gather_workspace_bytes(p, c),
            sm90_gather_workspace_bytes(p, mixed) + size_t(2) * p.hidden_size * p.num_tokens);
  bad = mixed;  // negative twins: GEMM1 not tma_ws, or on clusters
  bad.gemm1.launch.schedule = core::Schedule::kCooperative;
  expect_refused(p, bad, "differs from gemm2.tile.block_m = 256");
  bad = mixed;
  bad.gemm1.launch.cluster_m = 2;
  expect_refused(p, bad, "differs from gemm2.tile.block_m = 256");
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

// can_implement of block_m 192: tma_ws only, 12 warps, split_k 1, cluster 1x1, <= 96 accumulator
// registers, both GEMMs at 192; each refusal names the field.
TEST(Sm90Geometry, Tile192IsTmaWsWithThreeWarpgroupsOf64Rows) {
  core::MoeProblem p = s1_with(core::Activation::kSiluGated, 2048);
  p.intermediate_size = 1792;  // 28 k-tiles: split 2 would divide them
  const core::MoeConfig c{.gemm1 = tma_ws(192, 96, 4), .gemm2 = tma_ws(192, 192, 4)};
  ASSERT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
  auto g = gemm_geometry(p, c.gemm1, true);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->threads(), 512);
  EXPECT_EQ(g->acc_registers(), 96);
  EXPECT_EQ(g->smem_bytes(), 4 * (192 + 192) * 128 + 1024);
  auto bad = c;  // negative twins, one field each
  bad.gemm1.tile.block_n = 104;
  expect_refused(p, bad, "104 accumulator registers");
  bad = c;
  bad.gemm2.pipeline.num_warps = 8;
  expect_refused(p, bad, "num_warps 12");
  bad = c;
  bad.gemm2.pipeline.split_k = 2;
  expect_refused(p, bad, "split_k 2");
  bad = c;
  bad.gemm1.launch.cluster_m = bad.gemm2.launch.cluster_m = 2;
  expect_refused(p, bad, "cluster 2x1");
  for (auto sched : {core::Schedule::kCooperative, core::Schedule::kPingpong}) {
    bad = c;
    bad.gemm2.launch.schedule = sched;
    expect_refused(p, bad, "192 with schedule tma_ws");
  }
  bad = c;
  bad.gemm1.pipeline.num_stages = bad.gemm2.pipeline.num_stages = 5;
  expect_refused(p, bad, "shared memory");
  bad = c;
  bad.gemm1 = tma_ws(128, 96, 4);
  expect_refused(p, bad, "differs from gemm2.tile.block_m = 192");
}

/// A swap-AB config (launch.swap_ab with schedule tma_ws): block_m pairs per tile, 64 weight rows
/// per consumer warpgroup (num_warps / 4 of them), so block_n follows from the warps.
core::KernelConfig swap_ws(int bm, int warps, int stages, bool gated) {
  core::KernelConfig k = tma_ws(bm, swap_block_n(warps, gated), stages);
  k.pipeline.num_warps = warps;
  k.launch.swap_ab = true;
  return k;
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

// can_implement of swap-AB (launch.swap_ab with schedule tma_ws): both GEMMs swap-AB at one
// block_m, block_n set by the warps, block_k 64, no split-K or clusters, the stages within shared
// memory; each refusal names the field. GEMM1 gathers x's rows at block_m 64 and reads x's
// sorted copy above, which the workspace then holds.
TEST(Sm90Geometry, SwapAbTakesOneAlignBlockOfPairsPerTileAndSaysWhatItRefuses) {
  core::MoeProblem p = s1_with(core::Activation::kSiluGated, 2048);
  const core::MoeConfig c{.gemm1 = swap_ws(192, 12, 4, true), .gemm2 = swap_ws(192, 12, 4, false)};
  ASSERT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
  auto g1 = gemm_geometry(p, c.gemm1, true);
  auto g2 = gemm_geometry(p, c.gemm2, false);
  ASSERT_TRUE(g1.ok() && g2.ok());
  EXPECT_TRUE(g1->swap && g2->swap && !g1->decode);
  EXPECT_EQ(g1->block_n, 96);   // 3 x 64 weight rows: gate and up of 96 columns
  EXPECT_EQ(g2->block_n, 192);  // 3 x 64 output columns
  EXPECT_EQ(g1->threads(), 512);
  EXPECT_EQ(g1->acc_registers(), 96);
  EXPECT_EQ(g1->smem_bytes(), 4 * (192 + 192) * 128 + 1024);
  {  // at block_m 64 the swap-AB GEMM1 gathers x's rows; at 128 and up it reads x's sorted copy
    const core::MoeConfig swap64{.gemm1 = swap_ws(64, 12, 4, true),
                                 .gemm2 = swap_ws(64, 12, 4, false)};
    const core::MoeConfig swap128{.gemm1 = swap_ws(128, 12, 4, true),
                                  .gemm2 = swap_ws(128, 12, 4, false)};
    const core::MoeConfig ws64{.gemm1 = tma_ws(64, 128, 4), .gemm2 = tma_ws(64, 128, 4)};
    const core::MoeConfig ws128{.gemm1 = tma_ws(128, 128, 4), .gemm2 = tma_ws(128, 128, 4)};
    EXPECT_EQ(sm90_gather_workspace_bytes(p, swap64), sm90_gather_workspace_bytes(p, ws64));
    const int64_t copy =
        2 * max_blocks(core::num_pairs(p), p.num_experts, 128) * 128 * p.hidden_size;
    EXPECT_EQ(sm90_gather_workspace_bytes(p, swap128),
              sm90_gather_workspace_bytes(p, ws128) + (copy + 255) / 256 * 256);
  }
  auto mixed = c;  // beside a tma_ws kernel of its block_m, on the align path, either way round
  mixed.gemm2 = tma_ws(192, 128, 4);
  EXPECT_TRUE(sm90_can_implement(p, mixed).ok()) << core::short_string(mixed);
  mixed = c;
  mixed.gemm1 = tma_ws(192, 96, 4);
  EXPECT_TRUE(sm90_can_implement(p, mixed).ok()) << core::short_string(mixed);
  // Negative twins, one field each, and the text each refusal must hold.
  const std::pair<std::function<void(core::MoeConfig&)>, std::string> twins[] = {
      {[](core::MoeConfig& b) { b.gemm1.tile.block_n = 128; }, "tile.block_n = 96 with 12 warps"},
      {[](core::MoeConfig& b) { b.gemm2.pipeline.num_warps = 4; }, "num_warps = 8 or 12"},
      {[](core::MoeConfig& b) { b.gemm1.tile.block_m = b.gemm2.tile.block_m = 256; },
       "192 with 12 warps (96 accumulator registers at most); saw 256"},
      {[](core::MoeConfig& b) { b.gemm1.tile.block_m = b.gemm2.tile.block_m = 96; }, "saw 96"},
      {[](core::MoeConfig& b) { b.gemm2.pipeline.split_k = 2; }, "split_k 2"},
      {[](core::MoeConfig& b) { b.gemm1.launch.cluster_m = b.gemm2.launch.cluster_m = 2; },
       "cluster 2x1"},
      {[](core::MoeConfig& b) { b.gemm1.pipeline.num_stages = b.gemm2.pipeline.num_stages = 5; },
       "shared memory"},
      // the decode GEMM2 under a swap-AB GEMM1
      {[](core::MoeConfig& b) { b.gemm2.launch.schedule = core::Schedule::kAuto; },
       "set both or neither"},
      {[](core::MoeConfig& b) { b.gemm1 = swap_ws(128, 12, 4, true); },
       "differs from gemm2.tile.block_m = 192"},
      {[](core::MoeConfig& b) { b.gemm2.tile.block_k = 128; }, "block_k = 64"},
  };
  for (auto const& [mutate, text] : twins) {
    auto bad = c;
    mutate(bad);
    expect_refused(p, bad, text);
  }
}

// The per-GEMM space has a group of 192 (both GEMMs; GEMM1 also on swap-AB) where an expert holds
// more than 96 and at most 192 pairs (S2 M=2048 and S3 M=512: 128; S1 M=4096: 192), each config
// implementable with the group's base; none at S2 M=1024 (64 pairs per expert) or S3 M=1024 (256).
TEST(Sm90Space, OffersBothGemmsAt192WhereExpertsHoldMoreThan96To192Pairs) {
  CudaBackend backend{core::DeviceInfo{}};
  auto group192 = [&](core::MoeProblem const& p) -> std::optional<core::GemmSpace> {
    for (auto const& s : backend.gemm_search_space(p)) {
      if (s.block_m == 192) return s;
    }
    return std::nullopt;
  };
  core::MoeProblem s2 = moe_shape(128, 2048, 768, 8, core::Activation::kSiluGated, 2048);
  core::MoeProblem s3 = moe_shape(8, 4096, 14336, 2, core::Activation::kSiluGated, 512);
  core::MoeProblem s1_4096 = s1_with(core::Activation::kRelu2, 4096);
  for (core::MoeProblem const& p : {s2, s3, s1_4096}) {
    auto s = group192(p);
    ASSERT_TRUE(s.has_value()) << core::to_string(p);
    EXPECT_FALSE(s->gemm1.empty());
    EXPECT_FALSE(s->gemm2.empty());
    // GEMM1 on swap-AB too (the layer's best at S3 M=512), the base's GEMM1 a tma_ws one.
    EXPECT_EQ(std::count_if(s->gemm1.begin(), s->gemm1.end(), is_swap_ws), 2) << core::to_string(p);
    EXPECT_FALSE(is_swap_ws(s->base.gemm1));
    for (auto const& k : s->gemm1) {
      EXPECT_EQ(k.tile.block_m, 192) << core::short_string(k);
      ASSERT_TRUE(sm90_can_implement(p, {.gemm1 = k, .gemm2 = s->base.gemm2}).ok())
          << core::short_string(k);
    }
    for (auto const& k : s->gemm2) {
      EXPECT_EQ(k.tile.block_m, 192) << core::short_string(k);
      ASSERT_TRUE(sm90_can_implement(p, {.gemm1 = s->base.gemm1, .gemm2 = k}).ok())
          << core::short_string(k);
    }
  }
  s2.num_tokens = 1024;
  EXPECT_FALSE(group192(s2).has_value());
  s3.num_tokens = 1024;
  EXPECT_FALSE(group192(s3).has_value());
}

// The space offers powers of two (and 192) only: a block sized to the experts' pairs, e.g. 48 at
// S3 M=128's 32 +- 5.3 pairs, lost everywhere it was measured. mma.sync still implements any
// multiple of 16 up to 128 (tables may name one); cooperative refuses it, naming the rule.
TEST(Sm90Space, OffersPowersOfTwoThoughMmaSyncRunsAMultipleOf16) {
  CudaBackend backend{core::DeviceInfo{}};
  core::MoeProblem s3 = moe_shape(8, 4096, 14336, 2, core::Activation::kSiluGated, 128);
  core::MoeProblem s2 = moe_shape(128, 2048, 768, 8, core::Activation::kSiluGated, 512);
  for (auto const& p : {s3, s2}) {
    const auto space = backend.gemm_search_space(p);
    ASSERT_FALSE(space.empty());
    for (auto const& s : space) {
      EXPECT_TRUE(std::has_single_bit(static_cast<unsigned>(s.block_m)) || s.block_m == 192)
          << s.block_m;
    }
  }
  core::KernelConfig sized;
  sized.tile = {.block_m = 48, .block_n = 64, .block_k = 64, .group_m = 8};
  sized.pipeline = {.num_warps = 4, .num_stages = 3, .split_k = 1};
  sized.launch.schedule = core::Schedule::kAuto;
  EXPECT_TRUE(sm90_can_implement(s3, {.gemm1 = sized, .gemm2 = sized}).ok());
  core::KernelConfig coop = sized;  // negative twin: the wgmma main loop takes 64 or 128 rows
  coop.launch.schedule = core::Schedule::kCooperative;
  expect_refused(s3, {.gemm1 = coop, .gemm2 = coop}, "tile.block_m = 48");
  core::KernelConfig odd = sized;  // negative twin: not a multiple of 16
  odd.tile.block_m = 40;
  expect_refused(s3, {.gemm1 = odd, .gemm2 = odd}, "tile.block_m = 40");
}

// can_implement of clusters: 2x1 with tma_ws and split_k 1 only; each refusal names the field.
TEST(Sm90Geometry, ClusterPairIsForTmaWsWithoutSplitK) {
  core::MoeProblem p = s1();
  p.num_tokens = 4096;
  p.intermediate_size = 1792;  // 28 k-tiles: split 2 would divide them
  core::MoeConfig c{.gemm1 = tma_ws(128, 232, 4), .gemm2 = tma_ws(128, 224, 4)};
  c.gemm1.launch.cluster_m = c.gemm2.launch.cluster_m = 2;
  ASSERT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
  EXPECT_EQ(gemm_geometry(p, c.gemm2, false)->cluster_m, 2);
  for (int which = 0; which < 4; ++which) {  // negative twins
    auto bad = c;
    if (which == 0) bad.gemm2.launch.schedule = core::Schedule::kCooperative;
    if (which == 1) bad.gemm2 = pingpong(128, 128, 4), bad.gemm2.launch.cluster_m = 2;
    if (which == 2) bad.gemm2.pipeline.split_k = 2;
    if (which == 3) bad.gemm2.launch.cluster_n = 2;
    const std::string msg = expect_refused(p, bad, "launch.cluster");
    EXPECT_NE(msg.find("gemm2"), std::string::npos) << which << ": " << msg;
  }
}

// can_implement of cluster 1x2: GEMM2 with tma_ws (block_m 64, 128 or 256) and split_k 1 only;
// each refusal names the field and the GEMM.
TEST(Sm90Geometry, ClusterNPairIsForTmaWsGemm2WithoutSplitK) {
  core::MoeProblem p = s1();
  p.num_tokens = 4096;
  p.intermediate_size = 1792;  // 28 k-tiles: split 2 would divide them
  core::MoeConfig c{.gemm1 = tma_ws(128, 232, 4), .gemm2 = tma_ws(128, 224, 4)};
  c.gemm2.launch.cluster_n = 2;
  ASSERT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
  auto g2 = gemm_geometry(p, c.gemm2, false);
  ASSERT_TRUE(g2.ok());
  EXPECT_EQ(g2->cluster_n, 2);
  EXPECT_EQ(g2->cluster_size(), 2);
  auto c256 = c;
  c256.gemm2 = tma_ws(256, 128, 4);
  c256.gemm2.pipeline.num_warps = 8;
  c256.gemm2.launch.cluster_n = 2;
  EXPECT_TRUE(sm90_can_implement(p, c256).ok()) << sm90_can_implement(p, c256).error().to_string();
  for (int which = 0; which < 5; ++which) {  // negative twins
    auto bad = c;
    std::string gemm = "gemm2";
    if (which == 0) bad.gemm2.launch.schedule = core::Schedule::kCooperative;
    if (which == 1) bad.gemm2 = pingpong(128, 128, 4), bad.gemm2.launch.cluster_n = 2;
    if (which == 2) bad.gemm2.pipeline.split_k = 2;
    if (which == 3) bad.gemm2.launch.cluster_m = 2;  // 2x2
    if (which == 4) bad.gemm1.launch.cluster_n = 2, gemm = "gemm1";
    const std::string msg = expect_refused(p, bad, "launch.cluster");
    EXPECT_NE(msg.find(gemm), std::string::npos) << which << ": " << msg;
  }
}

// The search space offers CTA pairs at block_m 128 for both GEMMs where an expert has at least two
// 128-row blocks (S3 at M = 1024: 256 pairs per expert), never with split-K, and none below
// (S3 at M = 512: 128 pairs per expert) or at block_m 64.
TEST(Sm90Space, OffersClusterPairsWhereAnExpertHasTwo128RowBlocks) {
  core::MoeProblem p = moe_shape(8, 4096, 14336, 2, core::Activation::kSiluGated, 64);  // S3
  auto count = [&](int64_t m, int bm, bool is_gemm1) {
    p.num_tokens = m;
    int pairs = 0;
    for (core::KernelConfig const& k : sm90_gemm_candidates(p, bm, is_gemm1)) {
      if (k.launch.cluster_m != 2) continue;
      ++pairs;
      EXPECT_EQ(k.pipeline.split_k, 1) << core::short_string(k);
      EXPECT_EQ(k.launch.schedule, core::Schedule::kTmaWarpSpecialized);
      EXPECT_LE(k.pipeline.num_stages, 5);
    }
    return pairs;
  };
  for (bool is_gemm1 : {true, false}) {
    EXPECT_GT(count(1024, 128, is_gemm1), 0) << is_gemm1;
    EXPECT_EQ(count(512, 128, is_gemm1), 0) << is_gemm1;
    EXPECT_EQ(count(4096, 64, is_gemm1), 0) << is_gemm1;
  }
}

// The per-GEMM space has a group of 256 where an expert's rows fill one to three 128-row blocks
// (S3 M=512: 128 pairs per expert; S1 M=4096: 192): GEMM2 tma_ws 256-row tiles under tma_ws GEMM1s
// of 128-row sub-blocks (no clusters), two swap-AB GEMM1s and two swap-AB GEMM2s of 256 pairs per
// tile (group_m 1 and 8), each implementable with the group's base, whose GEMMs are tma_ws ones;
// none at S1 M=1024 (48 pairs per expert) or S3 M=4096 (1024).
TEST(Sm90Space, OffersGemm2At256UnderGemm1SubBlocksWhereExpertsFillOneToThreeBlocks) {
  CudaBackend backend{core::DeviceInfo{}};
  auto group256 = [&](core::MoeProblem const& p) -> std::optional<core::GemmSpace> {
    for (auto const& s : backend.gemm_search_space(p)) {
      if (s.block_m == 256) return s;
    }
    return std::nullopt;
  };
  core::MoeProblem s3 = moe_shape(8, 4096, 14336, 2, core::Activation::kSiluGated, 64);
  for (core::MoeProblem p : {s3, s1()}) {
    p.num_tokens = p.num_experts == 8 ? 512 : 4096;
    auto s = group256(p);
    ASSERT_TRUE(s.has_value()) << core::to_string(p);
    EXPECT_FALSE(s->gemm1.empty());
    EXPECT_FALSE(s->gemm2.empty());
    EXPECT_FALSE(s->base.gemm1.launch.swap_ab);
    int swaps = 0;
    for (auto const& k : s->gemm1) {
      EXPECT_EQ(k.launch.schedule, core::Schedule::kTmaWarpSpecialized) << core::short_string(k);
      EXPECT_EQ(k.launch.cluster_m, 1);
      if (k.launch.swap_ab) {
        ++swaps;
        EXPECT_EQ(k.tile.block_m, 256) << core::short_string(k);
        EXPECT_EQ(k.pipeline.num_warps, 8) << core::short_string(k);
      } else {
        EXPECT_EQ(k.tile.block_m, 128) << core::short_string(k);
      }
      ASSERT_TRUE(sm90_can_implement(p, {.gemm1 = k, .gemm2 = s->base.gemm2}).ok())
          << core::short_string(k);
    }
    EXPECT_EQ(swaps, 2) << core::to_string(p);
    EXPECT_FALSE(s->base.gemm2.launch.swap_ab);
    swaps = 0;
    for (auto const& k : s->gemm2) {
      EXPECT_EQ(k.tile.block_m, 256) << core::short_string(k);
      if (k.launch.swap_ab) {
        ++swaps;
        EXPECT_EQ(k.pipeline.num_warps, 8) << core::short_string(k);
      }
      ASSERT_TRUE(sm90_can_implement(p, {.gemm1 = s->base.gemm1, .gemm2 = k}).ok())
          << core::short_string(k);
    }
    EXPECT_EQ(swaps, 2) << core::to_string(p);
  }
  core::MoeProblem p = s1();
  p.num_tokens = 1024;
  EXPECT_FALSE(group256(p).has_value());
  s3.num_tokens = 4096;
  EXPECT_FALSE(group256(s3).has_value());
}

// The group of 128 offers two swap-AB GEMM2s (128 pairs per tile, three consumer warpgroups,
// group_m 1 and 8), implementable with the group's base GEMM1, where an expert holds 48 to 160
// pairs (S1 M=2048: 96; S2 M=1024: 64), and none at S1 M=8192 (384) or S2 M=256 (16).
TEST(Sm90Space, OffersSwapAbGemm2sAt128RowsWhereExpertsHold48To160Pairs) {
  CudaBackend backend{core::DeviceInfo{}};
  auto swap_gemm2s = [&](core::MoeProblem const& p) {
    int n = 0;
    for (auto const& s : backend.gemm_search_space(p)) {
      if (s.block_m != 128) continue;
      for (auto const& k : s.gemm2) {
        if (!k.launch.swap_ab) continue;
        ++n;
        EXPECT_EQ(k.pipeline.num_warps, 12) << core::short_string(k);
        EXPECT_TRUE(sm90_can_implement(p, {.gemm1 = s.base.gemm1, .gemm2 = k}).ok())
            << core::short_string(k);
      }
      EXPECT_FALSE(s.base.gemm2.launch.swap_ab);
    }
    return n;
  };
  core::MoeProblem p = s1();
  p.num_tokens = 2048;
  EXPECT_EQ(swap_gemm2s(p), 2);
  p.num_tokens = 8192;
  EXPECT_EQ(swap_gemm2s(p), 0);
  core::MoeProblem s2 = moe_shape(128, 2048, 768, 8, core::Activation::kSiluGated, 1024);
  EXPECT_EQ(swap_gemm2s(s2), 2);
  s2.num_tokens = 256;
  EXPECT_EQ(swap_gemm2s(s2), 0);
}

// can_implement of pingpong: 8 warps (two MMA warpgroups), one warpgroup's accumulators <= 128
// registers, no split-K; each refusal names the field.
TEST(Sm90Geometry, PingpongNeedsEightWarpsAndOneWarpgroupsAccumulators) {
  core::MoeProblem p = s1();
  p.num_tokens = 4096;
  core::MoeConfig c{.gemm1 = pingpong(128, 128, 4), .gemm2 = pingpong(128, 128, 4)};
  ASSERT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
  auto g = gemm_geometry(p, c.gemm2, false);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->threads(), 384);
  EXPECT_TRUE(g->persistent());
  EXPECT_EQ(g->acc_registers(), 128);
  auto bad = c;  // negative twins, one field each
  bad.gemm2.pipeline.num_warps = 4;
  expect_refused(p, bad, "num_warps = 4 with schedule pingpong");
  bad = c;
  bad.gemm2.tile.block_n = 256;
  expect_refused(p, bad, "256 accumulator registers");
  bad = c;
  bad.gemm2.pipeline.split_k = 2;
  p.intermediate_size = 1792;  // 28 k-tiles: split 2 divides them
  expect_refused(p, bad, "GEMM2 with schedule tma_ws only");
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

TEST(Sm90Geometry, SplitKIsForTmaWsGemm2WhenItDividesTheKTiles) {
  core::MoeProblem p = s1();  // I = 1856: 29 k-tiles of 64, prime
  core::MoeConfig c{.gemm1 = tma_ws(128, 232, 4), .gemm2 = tma_ws(128, 224, 4)};
  c.gemm2.pipeline.split_k = 2;
  EXPECT_EQ(expect_refused(p, c, "split_k"),
            "gemm2.pipeline.split_k = 2 must be in 1..8 and divide I / 64 = 29 (every split takes "
            "whole 64-deep k-tiles)");
  p.intermediate_size = 14336;  // 224 k-tiles: 2, 4, 7, 8 divide
  c.gemm1.tile.block_n = 256;
  EXPECT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
  auto g2 = gemm_geometry(p, c.gemm2, false);
  ASSERT_TRUE(g2.ok());
  EXPECT_EQ(g2->split_k, 2);
  // The split kernel is its own instantiation (the unsplit one carries no split code) and
  // compiles without spills.
  FreshCubinCache cache("jit_split_k");
  ASSERT_TRUE(cache.ok());
  auto exprs = expect_compiles_clean(p, c, "split-K 2");
  // GEMM1, GEMM2, align, combine, the multi-CTA align's count and place, the permute pass.
  ASSERT_EQ(exprs.size(), 7u);
  // Template tail: kSplitN, kSplitK, kPingpong, kClusterM.
  EXPECT_NE(exprs[1].find(",1,true,false,1>"), std::string::npos) << exprs[1];
  EXPECT_NE(exprs[0].find(",1,false,false,1>"), std::string::npos) << exprs[0];
  c.gemm2.launch.schedule = core::Schedule::kCooperative;  // negative twin: not tma_ws
  expect_refused(p, c, "GEMM2 with schedule tma_ws only");
}

TEST(Sm90Geometry, DecodeNeedsSwapAbOnBothGemmsAndSaysWhy) {
  core::MoeProblem p = s1();
  p.num_tokens = 4;
  core::MoeConfig c{.gemm1 = sm90_decode_base(p), .gemm2 = sm90_decode_base(p)};
  ASSERT_TRUE(sm90_can_implement(p, c).ok()) << sm90_can_implement(p, c).error().to_string();
  c.gemm2.launch.swap_ab = false;  // negative twin: one GEMM decode, the other not
  expect_refused(p, c, "set both or neither");
  c.gemm2 = c.gemm1;
  c.gemm1.pipeline.num_stages = 3;
  expect_refused(p, c, "gemm1.launch.swap_ab = true (decode kernels) takes pipeline.num_stages");
}

TEST(Sm90Geometry, TmaWarpSpecialisedRejectsAWrongWarpCountNamingTheProducer) {
  core::MoeProblem p = s1();
  core::MoeConfig c{.gemm1 = tma_ws(128, 232, 4), .gemm2 = tma_ws(128, 224, 4)};
  c.gemm2.pipeline.num_warps = 4;
  auto st = sm90_can_implement(p, c);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "gemm2.pipeline.num_warps = 4 with schedule tma_ws needs one MMA warpgroup per 64 "
            "rows; use 8 (the producer warpgroup is not counted)");
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

/// Sets MOETUNE_DEV_NVRTC_DEFINES for the scope and restores the old value after.
class ScopedDefines {
 public:
  explicit ScopedDefines(const char* value) {
    const char* old = std::getenv("MOETUNE_DEV_NVRTC_DEFINES");
    had_ = old != nullptr;
    if (had_) saved_ = old;
    ::setenv("MOETUNE_DEV_NVRTC_DEFINES", value, 1);
  }
  ~ScopedDefines() {
    if (had_)
      ::setenv("MOETUNE_DEV_NVRTC_DEFINES", saved_.c_str(), 1);
    else
      ::unsetenv("MOETUNE_DEV_NVRTC_DEFINES");
  }

 private:
  std::string saved_;
  bool had_ = false;
};

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

#include <filesystem>
#include <iostream>
#include <optional>

#include "core/lint.hpp"
#include "core/table.hpp"

namespace moetune::kernels::cuda {
namespace {

// CI has nvcc but no GPU: every config a shipped sm90_gather table names must pass can_implement
// and compile with NVRTC for sm_90a.
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

TEST(Sm90Jit, EveryConfigAShippedTableNamesCompiles) {
  const std::string dir = std::string(MOETUNE_SOURCE_DIR) + "/tables/NVIDIA_H200";
  auto files = core::list_table_files(dir);
  ASSERT_TRUE(files.ok()) << files.error().to_string();
  ASSERT_FALSE(files->empty()) << "no shipped H200 tables in " << dir;
  int compiled = 0;
  for (auto const& f : *files) {
    auto t = core::load_table(f);
    ASSERT_TRUE(t.ok()) << t.error().to_string();
    ASSERT_EQ(t->key.family, kSm90GatherFamily) << f;
    for (auto const& [m, row] : t->rows) {
      core::MoeProblem p = core::problem_for_key(t->key, m);
      auto st = sm90_can_implement(p, row.config);
      EXPECT_TRUE(st.ok()) << f << " M=" << m << ": " << st.error().to_string();
      auto exprs = sm90_gather_name_exprs(p, row.config);
      ASSERT_TRUE(exprs.ok());
      auto mod = compile_module(*exprs);
      EXPECT_TRUE(mod.ok()) << f << " M=" << m << ": " << (mod.ok() ? "" : mod.error().to_string());
      ++compiled;
    }
  }
  EXPECT_EQ(compiled, 36);
}

}  // namespace
}  // namespace moetune::kernels::cuda
