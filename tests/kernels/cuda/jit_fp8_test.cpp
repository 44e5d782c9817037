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
#include "kernels/cuda/sm90_gather_launch.hpp"
#include "kernels/cuda/sm90_gather_load.hpp"
#include "kernels/cuda/sm90_gather_space.hpp"
#include "kernels/cuda/sm90_layer_parts.hpp"
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

/// The default config on schedule tma_ws at block_m `bm` with `warps` consumer warps (block_m 64
/// with 8: two warpgroups splitting the columns), at the widest block_n the mode allows.
core::MoeConfig ws_config(core::MoeProblem const& p, int bm, int warps) {
  auto c = sm90_default_config(p);
  const bool block = p.quant == core::Quant::kFp8Block;
  const bool gated = core::is_gated(p.activation);
  for (auto* k : {&c.gemm1, &c.gemm2}) {
    k->launch.schedule = core::Schedule::kTmaWarpSpecialized;
    k->tile.block_m = bm;
    k->pipeline.num_warps = warps;
  }
  c.gemm1.tile.block_n = block && gated ? 64 : 128;
  c.gemm2.tile.block_n = block ? 128 : 256;
  return c;
}

TEST(Fp8Geometry, TmaWsTakesBlockM64Or128WithTheirWarpCounts) {
  for (auto const& p : shapes(4096)) {
    EXPECT_EQ(refusal(p, ws_config(p, 128, 8)), "accepted") << core::to_string(p);
    EXPECT_EQ(refusal(p, ws_config(p, 64, 8)), "accepted") << core::to_string(p);
    EXPECT_EQ(refusal(p, ws_config(p, 64, 4)), "accepted") << core::to_string(p);
    EXPECT_NE(refusal(p, ws_config(p, 128, 4)).find("pipeline.num_warps = 4"), std::string::npos)
        << core::to_string(p);
  }
}

TEST(Fp8Geometry, DefaultRuleRunsTmaWsAt64RowsBelow48PairsPerExpertAnd128From48) {
  for (auto base : shapes(1)) {
    const int64_t per_pair = base.num_experts / base.top_k;  // M = per_pair * pairs per expert
    for (auto [pairs, block_m] :
         {std::pair{0, 64}, std::pair{47, 64}, std::pair{48, 128}, std::pair{4096, 128}}) {
      auto p = base;
      p.num_tokens = pairs == 0 ? 1 : pairs * per_pair;
      auto const c = sm90_default_config(p);
      for (auto const& k : {c.gemm1, c.gemm2}) {
        EXPECT_EQ(k.launch.schedule, core::Schedule::kTmaWarpSpecialized) << core::short_string(c);
        EXPECT_EQ(k.tile.block_m, block_m) << core::to_string(p) << ": " << core::short_string(c);
        EXPECT_EQ(k.pipeline.num_warps, 8) << core::short_string(c);  // 64 rows: split columns
      }
      // block-scaled GEMM1 at 128 rows: 128 columns of h a warpgroup (gated: width 256), so it
      // stores hq (no quant pass over h)
      const bool wide =
          p.quant == core::Quant::kFp8Tensor || block_m == 128 || !core::is_gated(p.activation);
      EXPECT_EQ(c.gemm1.tile.block_n, wide ? 128 : 64) << core::short_string(c);
      auto const g1 = fp8_gemm_geometry(p, c.gemm1, true);
      ASSERT_TRUE(g1.ok());
      EXPECT_EQ(fp8_gemm1_writes_hq(g1.value()),
                p.quant == core::Quant::kFp8Tensor || block_m == 128)
          << core::to_string(p);
    }
  }
}

/// The decode pair the search space starts from (GEMM1 block_n 4 on 4 warps, GEMM2 on 8).
core::MoeConfig decode_config(core::MoeProblem const& p) {
  core::MoeConfig c;
  for (auto* k : {&c.gemm1, &c.gemm2}) {
    k->tile = {.block_m = decode_block_m(p), .block_n = 4, .block_k = 1024, .group_m = 1};
    k->pipeline = {.num_warps = k == &c.gemm1 ? 4 : 8, .num_stages = 1, .split_k = 1};
    k->launch.swap_ab = true;
  }
  return c;
}

// The fp8 decode kernels: both GEMMs or neither, 16 e4m3 values per vector (block_k from 512),
// the token's quantised h rows within shared memory; two modules, no align, quant or combine.
TEST(Fp8Geometry, DecodeKernelsTakeBothGemmsAndSayWhatTheyRefuse) {
  auto const p = shapes(1)[1];  // block-scaled, gated, M = 1
  auto const c = decode_config(p);
  ASSERT_EQ(refusal(p, c), "accepted");
  auto exprs = sm90_gather_name_exprs(p, c);
  ASSERT_TRUE(exprs.ok()) << exprs.error().to_string();
  ASSERT_EQ(exprs->size(), 2u);
  EXPECT_NE((*exprs)[0].find("moe_fp8_decode_gemm1_kernel<"), std::string::npos) << (*exprs)[0];
  EXPECT_NE((*exprs)[1].find("moe_fp8_decode_gemm2_kernel<true,"), std::string::npos)
      << (*exprs)[1];
  auto mixed = c;
  mixed.gemm2 = ws_config(shapes(4096)[1], 64, 8).gemm2;  // negative twin: only GEMM1 decode
  EXPECT_NE(refusal(p, mixed).find("gemm1 runs the decode kernels"), std::string::npos)
      << refusal(p, mixed);
  auto bk = c;
  bk.gemm1.tile.block_k = 256;  // 8 e4m3 values a lane: not a 16-byte vector
  EXPECT_NE(refusal(p, bk).find("gemm1.launch.swap_ab = true (decode kernels) takes tile.block_k "
                                "= 512..2048"),
            std::string::npos)
      << refusal(p, bk);
  auto wide = fp8(moe_shape(64, 1024, 16384, 16, core::Activation::kSiluGated),
                  core::Quant::kFp8Block, 1);  // 16 h rows of 16384 e4m3: 256 KB
  EXPECT_NE(refusal(wide, decode_config(wide)).find("top_k quantised h rows in shared memory"),
            std::string::npos)
      << refusal(wide, decode_config(wide));
  // The search space offers them at tiny M only; the default rule does not take them.
  auto has_decode = [](core::MoeProblem const& q) {
    for (auto const& s : sm90_joint_search_space(q))
      if (s.gemm1.launch.swap_ab) return true;
    return false;
  };
  EXPECT_TRUE(has_decode(p));
  EXPECT_FALSE(has_decode(shapes(64)[1]));
  EXPECT_FALSE(sm90_default_config(p).gemm1.launch.swap_ab);
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
  auto wide = ws_config(p, 128, 8);
  wide.gemm1.tile.block_n = 128;  // width 256 with partial sums: tma_ws runs it in two parts
  wide.gemm2.tile.block_n = 256;  // two weight blocks
  EXPECT_EQ(refusal(p, wide), "accepted");
  for (auto* k : {&wide.gemm1, &wide.gemm2}) k->launch.schedule = core::Schedule::kCooperative;
  // negative twin: the cp.async loop keeps one part, width 128 at most
  EXPECT_NE(refusal(p, wide).find("gemm1.tile.block_n = 128"), std::string::npos)
      << refusal(p, wide);
  auto gated256 = ws_config(p, 128, 8);
  gated256.gemm1.tile.block_n = 256;  // gated: 512 wide
  EXPECT_NE(refusal(p, gated256).find("gemm1.tile.block_n = 256"), std::string::npos)
      << refusal(p, gated256);
  auto pp = c;
  pp.gemm2.launch.schedule = core::Schedule::kPingpong;
  EXPECT_NE(refusal(p, pp).find("fp8 runs schedule cooperative or tma_ws"), std::string::npos)
      << refusal(p, pp);
  auto ws = ws_config(p, 64, 8);
  ws.gemm1.pipeline.num_warps = 6;
  EXPECT_NE(refusal(p, ws).find("gemm1.pipeline.num_warps = 6"), std::string::npos)
      << refusal(p, ws);
  auto split = ws_config(p, 64, 8);
  split.gemm1.tile.block_n = 48;  // split N: 24 columns a warpgroup
  EXPECT_NE(refusal(p, split).find("use a multiple of 32"), std::string::npos) << refusal(p, split);
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

/// GEMM1's geometry of config c on problem p (which must accept it).
GemmGeometry gemm1_geometry(core::MoeProblem const& p, core::MoeConfig const& c) {
  auto g = fp8_gemm_geometry(p, c.gemm1, true);
  EXPECT_TRUE(g.ok()) << refusal(p, c);
  return g.ok() ? g.value() : GemmGeometry{};
}

TEST(Fp8Geometry, Gemm1StoresHqPerTensorAndBlockScaledInWhole128ColumnGroups) {
  auto const block = shapes(4096)[1];   // gated: a warpgroup's h columns = block_n / warps_n
  auto const tensor = shapes(4096)[2];  // per-tensor: always from tma_ws
  EXPECT_TRUE(fp8_gemm1_writes_hq(gemm1_geometry(tensor, ws_config(tensor, 128, 8))));
  auto c = ws_config(block, 128, 8);  // block_n 64: half a group
  c.gemm1.pipeline.num_stages = 4;    // 48 KB a stage at 128 columns
  EXPECT_FALSE(fp8_gemm1_writes_hq(gemm1_geometry(block, c)));
  c.gemm1.tile.block_n = 128;  // one group a warpgroup (width 256)
  EXPECT_TRUE(fp8_gemm1_writes_hq(gemm1_geometry(block, c)));
  auto split = ws_config(block, 64, 8);  // two warpgroups splitting the columns
  split.gemm1.tile.block_n = 128;        // 64 columns each: not whole groups
  split.gemm1.pipeline.num_stages = 4;
  EXPECT_FALSE(fp8_gemm1_writes_hq(gemm1_geometry(block, split)));
  split.gemm1.tile.block_n = 256;  // 128 each
  split.gemm1.pipeline.num_stages = 3;
  EXPECT_TRUE(fp8_gemm1_writes_hq(gemm1_geometry(block, split)));
  auto relu2 = shapes(4096)[3];  // not gated: 256 columns are two groups
  auto wide = ws_config(relu2, 128, 8);
  wide.gemm1.tile.block_n = 256;
  wide.gemm1.pipeline.num_stages = 4;
  EXPECT_TRUE(fp8_gemm1_writes_hq(gemm1_geometry(relu2, wide)));
  for (auto* k : {&c.gemm1, &c.gemm2}) k->launch.schedule = core::Schedule::kCooperative;
  c.gemm1.tile.block_n = 64;  // the cp.async loop stores bf16 h
  EXPECT_FALSE(fp8_gemm1_writes_hq(gemm1_geometry(block, c)));
}

/// Where GEMM1 stores hq the workspace holds no bf16 h: smaller by at least 2 bytes per pair and
/// column of h, the same by config and by loaded kernels.
TEST(Fp8Geometry, WorkspaceHoldsNoBf16HWhereGemm1StoresHq) {
  for (auto const& p : {shapes(4096)[1], shapes(4096)[2]}) {
    auto bf16_h = ws_config(p, 128, 8);
    bf16_h.gemm1.pipeline.num_stages = 4;
    auto hq = bf16_h;
    if (p.quant == core::Quant::kFp8Block) {
      hq.gemm1.tile.block_n = 128;  // whole 128-column groups: stores hq
    } else {
      for (auto* k : {&bf16_h.gemm1, &bf16_h.gemm2})
        k->launch.schedule = core::Schedule::kCooperative;
      bf16_h.gemm1.tile.block_n = 64;  // the cp.async loop stores bf16 h
      bf16_h.gemm2.tile.block_n = 128;
      bf16_h.gemm1.pipeline.num_stages = bf16_h.gemm2.pipeline.num_stages = 3;
    }
    ASSERT_EQ(refusal(p, bf16_h), "accepted");
    ASSERT_EQ(refusal(p, hq), "accepted");
    auto g1 = gemm1_geometry(p, hq);
    ASSERT_TRUE(fp8_gemm1_writes_hq(g1));
    ASSERT_FALSE(fp8_gemm1_writes_hq(gemm1_geometry(p, bf16_h)));
    const size_t with_h = sm90_gather_workspace_bytes(p, bf16_h);
    const size_t without = sm90_gather_workspace_bytes(p, hq);
    const size_t h_bytes = size_t{2} * core::num_pairs(p) * p.intermediate_size;
    EXPECT_GE(with_h, without + h_bytes) << core::short_string(hq);
    Sm90GatherKernels k;
    k.g1 = g1;
    auto g2 = gemm_geometry(p, hq.gemm2, false);
    ASSERT_TRUE(g2.ok());
    k.g2 = *g2;
    EXPECT_EQ(sm90_gather_workspace_bytes(k, p), without);
  }
}

// Scale buffers only where the kernels write them (block-scaled), and no quantised inputs at all
// for the decode kernels, which quantise in each CTA: the layout, and the config-driven size.
TEST(Fp8Geometry, WorkspaceHoldsOnlyTheFp8BuffersTheKernelsUse) {
  for (auto const& p : {shapes(4096)[1], shapes(4096)[2]}) {
    const bool block = p.quant == core::Quant::kFp8Block;
    const auto w = parts::layout_for(p, 128, 1, 1, parts::LayoutNeeds{.bf16_h = false});
    EXPECT_GT(w.xq, 0u);
    EXPECT_GT(w.hq, 0u);
    EXPECT_EQ(w.xs > 0, block) << core::to_string(p);
    EXPECT_EQ(w.hs > 0, block) << core::to_string(p);
    const auto none = parts::layout_for(p, 128, 1, 1, {.bf16_h = false, .fp8_inputs = false});
    EXPECT_EQ(none.xq + none.xs + none.hq + none.hs, 0u);
    const size_t inputs = size_t(p.num_tokens) * p.hidden_size;  // xq at least
    EXPECT_GE(w.total, none.total + inputs);
  }
  for (auto const& p : shapes(1)) {
    auto const c = decode_config(p);
    ASSERT_EQ(refusal(p, c), "accepted");
    const int bm = decode_block_m(p);
    EXPECT_EQ(sm90_gather_workspace_bytes(p, c),
              parts::layout_for(p, bm, 1, 1, {.fp8_inputs = false}).total)
        << core::to_string(p);
  }
}

int spill_reports_all_zero(std::string const& log) {
  const std::regex spill(R"((\d+) bytes spill (stores|loads))");
  int lines = 0;
  for (std::sregex_iterator it(log.begin(), log.end(), spill), e; it != e; ++it, ++lines) {
    EXPECT_EQ((*it)[1].str(), "0") << it->str();
  }
  return lines;
}

// Every default fp8 kernel (both modes, gated and not, both block_m), the tma_ws kernels
// (block_m 128, 64 splitting N, and width 256) and the decode kernels compile with no spills.
TEST(Sm90Jit, Fp8KernelsCompileWithoutSpillsOrSerialisedWgmma) {
  FreshCubinCache cache("jit_fp8");
  ASSERT_TRUE(cache.ok());
  for (int64_t m : {1, 4, 8192, 0, -1}) {
    for (auto const& p : shapes(m <= 0 ? 8192 : m)) {
      auto c = m == 0 ? ws_config(p, 128, 8) : m == 1 ? decode_config(p) : sm90_default_config(p);
      if (m == 0 && p.num_experts == 64) c = ws_config(p, 64, 8);
      if (m == -1) {  // width 256 (block-scaled: two parts), 4 stages
        c = ws_config(p, 128, 8);
        c.gemm1.tile.block_n = core::is_gated(p.activation) ? 128 : 256;
        c.gemm2.tile.block_n = 256;
        for (auto* k : {&c.gemm1, &c.gemm2}) k->pipeline.num_stages = 4;
      }
      auto modules = sm90_gather_modules(p, c);
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

TEST(Sm90Jit, Fp8TestbedReferenceCompiles) {
  FreshCubinCache cache("jit_fp8_ref");
  ASSERT_TRUE(cache.ok());
  auto mod = compile_module(
      {"&moetune_dev::moe_fill_fp8_e4m3_kernel", "&moetune_dev::moe_fill_fp8_scale_kernel",
       "&moetune_dev::moe_ref_fp8_quant_kernel", "&moetune_dev::moe_ref_fp8_gemm1_kernel",
       "&moetune_dev::moe_ref_fp8_gemm2_kernel"});
  ASSERT_TRUE(mod.ok()) << mod.error().to_string();
  EXPECT_EQ(mod->lowered.size(), 5u);
}

}  // namespace
}  // namespace moetune::kernels::cuda
