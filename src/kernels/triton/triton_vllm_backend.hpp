// The triton_vllm kernel family (vLLM's own Triton fused_moe_kernel) as a core::Backend: config
// logic only. Its kernel runs in a Python worker (python/moetune/tuner/triton_worker.py, started
// by `moetune worker --backend triton`), which answers the tuner's space and feasible requests
// itself; this mirror serves what runs without Python: resolve (the default rule), lint (which
// rows the family can produce). The rules are python/moetune/tuner/triton_rules.py's, in words:
//
//   one row for both GEMMs (gemm1 == gemm2), written as vLLM's six fields;
//   block sizes powers of two >= 16 (tl.arange, tl.dot); num_warps 4 or 8; num_stages >= 1;
//   group_m >= 1; split_k 1 (vLLM 0.33.0 launches SPLIT_K = 1 whatever a row says); launch knobs
//   at their defaults; bf16 with silu or relu2, unquantised or fp8 w8a8 (quant fp8_block:
//   128x128 weight blocks, activations per token per 128 channels; fp8_tensor: per-expert
//   weight scales, static input scales); fp8 needs sm_89 or later (Triton's e4m3) and
//   block_k >= 32 (tl.dot on 8-bit operands); shared memory (triton_vllm_smem_bytes) within the
//   arch's per-block limit ("cpu", the interpreter, is judged as sm_90).
//   Default (vLLM 0.33.0 get_default_config): bf16 and fp8_tensor: BLOCK_SIZE_M 16 / 32 / 64 /
//   128 for M <= 32 / 96 / 512 / above; BLOCK_SIZE_N 64 for M <= 64 else 128; BLOCK_SIZE_K 128
//   for M <= 64 or fp8_tensor, else 64; GROUP_SIZE_M 16 when M / E > 128 else 1; num_warps 4
//   for M <= 128 else 8; num_stages 4 for M <= 32 else 3. fp8_block: BLOCK_SIZE_M 16 for
//   M <= 64 else 64; BLOCK_SIZE_N 64 for M <= 8 else 128; BLOCK_SIZE_K 128; GROUP_SIZE_M 1 for
//   M <= 16 else 32; num_warps 4; num_stages 4 for M <= 4 else 3.
//   Space: vLLM's tuner space (for fp8_block filtered as its tuner filters it for a block
//   shape: BLOCK_SIZE_N and BLOCK_SIZE_K multiples of 128) less equivalent configs
//   (triton_rules.py's docstring says which).
// tests/kernels/triton/triton_vllm_cases.json holds cases both implementations must answer alike
// (tests/kernels/triton/triton_vllm_backend_test.cpp, tests/python/test_triton_worker.py).
#pragma once

#include <string>
#include <vector>

#include "core/backend.hpp"

namespace moetune::kernels::triton {

/// Family name and version recorded in tables and caches.
inline constexpr char kTritonVllmFamily[] = "triton_vllm";
inline constexpr int kTritonVllmFamilyVersion = 1;

/// Shared memory one block may use on `arch` (cudaDevAttrMaxSharedMemoryPerBlockOptin), 0 when
/// the arch is unknown. "cpu" (Triton's interpreter, no limit of its own) gives sm_90's.
int64_t triton_vllm_smem_limit(std::string const& arch);

/// Shared memory in bytes of one block of vLLM's kernel for gemm1 of `config` on `arch` with
/// quantisation `quant`, as Triton 3.6 allocates it (triton_rules.smem_bytes says how it was
/// checked): max(operands, block_m * block_n * 2), the second the epilogue's bf16 C tile (bf16
/// for fp8 too: the accumulator is cast to bf16 before it is stored), operands = buffers *
/// (block_m + block_n) * launched block_k * (2 bytes bf16, 1 fp8), buffers = num_stages where
/// sm_90's wgmma reads operands from shared memory (block_m >= 64, or an fp8 tile vLLM swaps:
/// block_m < 64, block_n >= 64; "cpu" counts as sm_90), else num_stages - 1 (at least 1);
/// fp8_block launches block_k as min(block_k, 128) and adds 4 * max(block_m, block_n) bytes
/// (its fp32 scale vectors' layout conversion) when that length is >= 32 * num_warps.
int64_t triton_vllm_smem_bytes(std::string const& arch, core::KernelConfig const& k,
                               core::Quant quant = core::Quant::kNone);

/// Ok, or the first reason (kUnsupported) triton_vllm cannot run `config` for `problem`; the
/// message is triton_rules.feasible's, word for word. `smem_limit_bytes` 0: the arch's limit.
core::Status triton_vllm_can_implement(core::MoeProblem const& problem,
                                       core::MoeConfig const& config, int64_t smem_limit_bytes = 0);

/// vLLM 0.33.0's default rule for problem's quantisation at M = problem.num_tokens (see above).
core::MoeConfig triton_vllm_default_config(core::MoeProblem const& problem);

/// vLLM's tuner space for (problem, M), less equivalent configs, nearest the default rule's row
/// first (triton_rules.prior_distance), then in vLLM's product order.
std::vector<core::MoeConfig> triton_vllm_search_space(core::MoeProblem const& problem);

/// The backend: name "triton", family "triton_vllm". Tuned jointly (no per-GEMM spaces).
class TritonVllmBackend final : public core::Backend {
 public:
  std::string name() const override { return "triton"; }
  std::string family() const override { return kTritonVllmFamily; }
  int family_version() const override { return kTritonVllmFamilyVersion; }
  /// This process's CPU: the device is what the Python worker sees, which hello reports.
  core::DeviceInfo device() const override { return core::cpu_device_info(); }
  core::Status can_implement(core::MoeProblem const& problem,
                             core::MoeConfig const& config) const override {
    return triton_vllm_can_implement(problem, config);
  }
  core::MoeConfig default_config(core::MoeProblem const& problem) const override {
    return triton_vllm_default_config(problem);
  }
  std::vector<core::MoeConfig> search_space(core::MoeProblem const& problem) const override {
    return triton_vllm_search_space(problem);
  }
  std::vector<core::GemmSpace> gemm_search_space(core::MoeProblem const&) const override {
    return {};
  }
};

}  // namespace moetune::kernels::triton
