// Shared by the sm90_gather JIT tests (jit_geometry_test.cpp, jit_space_test.cpp,
// jit_compile_test.cpp, jit_nvrtc_test.cpp): S1 at another activation and M, the config builders
// (tma_ws, pingpong, swap-AB), can_implement's refusal check, and the NVRTC compile checks (no
// spills in ptxas -v, no serialised wgmma).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "kernels/cuda/jit.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"
#include "kernels/cuda/sm90_gather_load.hpp"
#include "kernels/cuda/sm90_swap_geometry.hpp"
#include "moe_shape.hpp"

namespace moetune::kernels::cuda::testing {

// Problems here run M = 64 unless a test says otherwise (past the decode kernels' M: their default
// starts at M <= 4).
inline core::MoeProblem s1() { return moe_shape(128, 2688, 1856, 6, core::Activation::kRelu2, 64); }

/// S1's sizes with another activation and M.
inline core::MoeProblem s1_with(core::Activation act, int64_t m) {
  core::MoeProblem p = s1();
  p.activation = act;
  p.num_tokens = m;
  return p;
}

/// can_implement refuses `c` for `p` with a message containing `text`; returns the message ("" when
/// it was accepted, which fails the test).
inline std::string expect_refused(core::MoeProblem const& p, core::MoeConfig const& c,
                                  std::string const& text) {
  auto st = sm90_can_implement(p, c);
  EXPECT_FALSE(st.ok()) << "accepted: " << core::short_string(c);
  if (st.ok()) return "";
  EXPECT_NE(st.error().message.find(text), std::string::npos) << st.error().message;
  return st.error().message;
}

inline core::KernelConfig tma_ws(int bm, int bn, int stages) {
  core::KernelConfig k;
  k.tile = {.block_m = bm, .block_n = bn, .block_k = 64, .group_m = 8};
  k.pipeline = {.num_warps = bm / 16, .num_stages = stages, .split_k = 1};
  k.launch.schedule = core::Schedule::kTmaWarpSpecialized;
  return k;
}

inline core::KernelConfig pingpong(int bm, int bn, int stages) {
  core::KernelConfig k = tma_ws(bm, bn, stages);
  k.pipeline.num_warps = 8;
  k.launch.schedule = core::Schedule::kPingpong;
  return k;
}

/// A swap-AB config (launch.swap_ab with schedule tma_ws): block_m pairs per tile, 64 weight rows
/// per consumer warpgroup (num_warps / 4 of them), so block_n follows from the warps.
inline core::KernelConfig swap_ws(int bm, int warps, int stages, bool gated) {
  core::KernelConfig k = tma_ws(bm, swap_block_n(warps, gated), stages);
  k.pipeline.num_warps = warps;
  k.launch.swap_ab = true;
  return k;
}

/// Every "N bytes spill stores/loads" line of a ptxas -v log says 0; returns how many there were.
inline int expect_no_spills(std::string const& ptxas_log) {
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
inline std::string expect_one_clean_module(std::vector<std::string> exprs) {
  std::sort(exprs.begin(), exprs.end());
  exprs.erase(std::unique(exprs.begin(), exprs.end()), exprs.end());
  auto m = compile_module(exprs);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  if (!m.ok()) return "";
  EXPECT_GE(expect_no_spills(m->ptxas_log), static_cast<int>(exprs.size()))
      << "no ptxas -v report per kernel";
  return m->ptxas_log;
}

/// Compiles `c`'s module (in the current cubin cache) and checks it: can_implement passes, NVRTC
/// compiles it, ptxas -v reports a kernel with no spills, and no wgmma is serialised. Returns the
/// name expressions (empty when it could not get that far).
inline std::vector<std::string> expect_compiles_clean(core::MoeProblem const& p,
                                                      core::MoeConfig const& c,
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

}  // namespace moetune::kernels::cuda::testing
