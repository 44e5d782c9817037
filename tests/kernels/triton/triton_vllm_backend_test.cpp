// The triton_vllm family's C++ mirror (kernels/triton/triton_vllm_backend.hpp) against the cases
// python/moetune/tuner/triton_rules.py answers too (triton_vllm_cases.json beside this file, read
// by tests/python/test_triton_worker.py): the same reasons word for word, vLLM 0.33.0's default
// rule, the same space. Each rule also has a negative twin here: a case that passes next to one
// changed field that must not.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "core/flat_json.hpp"
#include "core/json_text.hpp"
#include "kernels/testbed.hpp"
#include "kernels/triton/triton_vllm_backend.hpp"

namespace moetune::kernels::triton {
namespace {

using core::FlatJson;

std::string cases_text() {
  std::string const path =
      std::string(MOETUNE_SOURCE_DIR) + "/tests/kernels/triton/triton_vllm_cases.json";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The items of one top-level array of the cases file, each a flat object's members.
std::vector<FlatJson> cases(std::string const& key) {
  auto top = FlatJson::parse(cases_text(), "triton_vllm_cases.json");
  EXPECT_TRUE(top.ok()) << top.error().to_string();
  if (!top.ok()) return {};
  auto items = FlatJson::split_array(top->raw(key), key);
  EXPECT_TRUE(items.ok());
  std::vector<FlatJson> out;
  for (std::string const& item : *items) out.push_back(*FlatJson::parse(item, key));
  return out;
}

core::MoeProblem problem_of(FlatJson const& c) {
  return *core::parse_moe_problem_json(c.raw("problem"), "problem");
}

/// A vLLM row {BLOCK_SIZE_M, ...} as the uniform config it stands for.
core::MoeConfig config_of_row(std::string const& raw) {
  auto r = *FlatJson::parse(raw, "row");
  core::KernelConfig k;
  k.tile = {.block_m = int(*r.number("BLOCK_SIZE_M")),
            .block_n = int(*r.number("BLOCK_SIZE_N")),
            .block_k = int(*r.number("BLOCK_SIZE_K")),
            .group_m = int(*r.number("GROUP_SIZE_M"))};
  k.pipeline.num_warps = int(*r.number("num_warps"));
  k.pipeline.num_stages = int(*r.number("num_stages"));
  return core::uniform_config(k);
}

TEST(TritonVllmBackend, AnswersEveryFeasibilityCaseWithPythonsReasonVerbatim) {
  auto all = cases("feasible");
  ASSERT_GE(all.size(), 15u);
  for (FlatJson const& c : all) {
    SCOPED_TRACE(*c.string("what"));
    auto config = core::parse_moe_config_json(c.raw("config"), "config");
    ASSERT_TRUE(config.ok()) << config.error().to_string();
    core::Status const s = triton_vllm_can_implement(problem_of(c), *config);
    EXPECT_EQ(s.ok() ? "" : s.error().message, *c.string("reason"));
  }
}

TEST(TritonVllmBackend, DefaultIsVllmsRuleAtEveryCaseM) {
  auto all = cases("default");
  ASSERT_GE(all.size(), 20u);
  for (FlatJson const& c : all) {
    core::MoeProblem const p = problem_of(c);
    SCOPED_TRACE("M=" + std::to_string(p.num_tokens) + " E=" + std::to_string(p.num_experts));
    EXPECT_EQ(core::to_string(triton_vllm_default_config(p)),
              core::to_string(config_of_row(c.raw("row"))));
  }
}

TEST(TritonVllmBackend, SpaceHasPythonsSizeEndsAndFeasibleCount) {
  for (FlatJson const& c : cases("space")) {
    core::MoeProblem const p = problem_of(c);
    SCOPED_TRACE(core::to_string(p));
    auto const space = triton_vllm_search_space(p);
    ASSERT_EQ(double(space.size()), *c.number("size"));
    EXPECT_EQ(core::to_string(space.front()), core::to_string(config_of_row(c.raw("first"))));
    EXPECT_EQ(core::to_string(space.back()), core::to_string(config_of_row(c.raw("last"))));
    int feasible = 0;
    for (auto const& config : space) feasible += triton_vllm_can_implement(p, config).ok();
    EXPECT_EQ(double(feasible), *c.number("feasible_sm90"));
  }
}

TEST(TritonVllmBackend, SharedMemoryRuleMatchesTritonsAllocationOnHopper) {
  // Triton 3.6 compiled for sm_90 (vLLM's kernel, K=7168): m64n64k64 s3 took 49152 bytes (three
  // buffers), m16n64k128 s4 took 61440 (three: mma.sync below block_m 64).
  core::KernelConfig k = core::uniform_config({}).gemm1;
  k.tile = {.block_m = 64, .block_n = 64, .block_k = 64, .group_m = 1};
  k.pipeline.num_stages = 3;
  EXPECT_EQ(triton_vllm_smem_bytes("sm_90a", k), 49152);
  k.tile = {.block_m = 16, .block_n = 64, .block_k = 128, .group_m = 1};
  k.pipeline.num_stages = 4;
  EXPECT_EQ(triton_vllm_smem_bytes("sm_90a", k), 61440);
  EXPECT_EQ(triton_vllm_smem_limit("sm_90a"), 232448);
  EXPECT_EQ(triton_vllm_smem_limit("sm_75"), 0);
}

TEST(TritonVllmBackend, Fp8SharedMemoryRuleMatchesTritonsAllocation) {
  // Triton 3.6 compiled vLLM's fp8 launch (GEMM1, K=2048, I=768, E=128, M=256) to these bytes.
  auto smem = [](char const* arch, core::Quant q, int bm, int bn, int bk, int warps, int stages) {
    core::KernelConfig k = core::uniform_config({}).gemm1;
    k.tile = {.block_m = bm, .block_n = bn, .block_k = bk, .group_m = 1};
    k.pipeline.num_warps = warps;
    k.pipeline.num_stages = stages;
    return triton_vllm_smem_bytes(arch, k, q);
  };
  using core::Quant;
  // 1-byte operands, wgmma's num_stages buffers, plus 4 x 128 B converting the scale vectors.
  EXPECT_EQ(smem("sm_90a", Quant::kFp8Block, 128, 32, 64, 4, 2), 20992);
  // At 8 warps a 128-long vector moves within warps: no conversion buffer.
  EXPECT_EQ(smem("sm_90a", Quant::kFp8Block, 128, 128, 128, 8, 3), 98304);
  // block_k 256 is launched as 128.
  EXPECT_EQ(smem("sm_90a", Quant::kFp8Block, 64, 32, 256, 4, 4), 49152);
  // vLLM swaps m16n128 on sm_90 (wgmma: 3 buffers); sm_89 runs it on mma.sync (2 buffers).
  EXPECT_EQ(smem("sm_90a", Quant::kFp8Tensor, 16, 128, 128, 4, 3), 55296);
  EXPECT_EQ(smem("sm_89", Quant::kFp8Tensor, 16, 128, 128, 4, 3), 36864);
  // The epilogue's bf16 C tile is larger than one 1-byte buffer pair here, and Triton took it.
  EXPECT_EQ(smem("sm_89", Quant::kFp8Block, 128, 64, 64, 4, 2), 16384);
}

TEST(TritonVllmBackend, OneFieldOffTheDefaultIsRefused) {
  core::MoeProblem p;
  p.num_tokens = 64;
  p.hidden_size = 2048;
  p.intermediate_size = 768;
  p.num_experts = 128;
  p.top_k = 8;
  core::MoeConfig const good = triton_vllm_default_config(p);
  ASSERT_TRUE(triton_vllm_can_implement(p, good).ok());
  core::MoeConfig bad = good;
  bad.gemm2.tile.block_n = 128;  // a second row vLLM cannot read
  EXPECT_FALSE(triton_vllm_can_implement(p, bad).ok());
  bad = good;
  bad.gemm1.pipeline.num_warps = bad.gemm2.pipeline.num_warps = 16;
  EXPECT_FALSE(triton_vllm_can_implement(p, bad).ok());
}

TEST(TritonVllmBackend, RegistryServesItAsTheTritonBackendWithoutATestbed) {
  auto backend = make_backend("triton");
  ASSERT_TRUE(backend.ok()) << backend.error().to_string();
  EXPECT_EQ((*backend)->family(), "triton_vllm");
  EXPECT_EQ((*backend)->name(), "triton");
  auto testbed = make_testbed("triton");
  ASSERT_FALSE(testbed.ok());
  EXPECT_NE(testbed.error().message.find("runs in a Python worker"), std::string::npos);
}

}  // namespace
}  // namespace moetune::kernels::triton
