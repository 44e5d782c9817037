// The cpu_tiled kernel family as a core::Backend: which configs it accepts (and why not), its
// documented default config, and its search space. The kernel itself is cpu_moe.hpp.
//
// Default config rule (default_config), with P = ceil(M * top_k / E), the mean token-expert pairs
// per expert:
//   block_m = smallest of {8, 16, 32, 64} >= P (64 when P > 32): tiny M (decode) pads each hit
//             expert to 8 rows, not 64, so almost no work is spent on padding rows;
//   block_n = 64 for both GEMMs; block_k = 128 for GEMM1 and GEMM2 (capped at the reduction
//             depth's next power of two, never below 8): the packed B tile (block_k x block_n
//             fp32, x2 when gated) stays within 64 KiB, i.e. L2-resident on any current core;
//   group_m = 8 when P >= 256 (large M: several m-blocks share a packed weight panel in cache),
//             else 1;
//   split_k = 1; num_threads = 1 when flops(problem) < kSingleThreadFlops (8 MFLOP, ~0.3 ms on one
//             core: less than starting the workers costs, measured on a 16-core Xeon: M=1 of
//             E=8,K=256,I=256,top_k=2 took 679 us on 16 threads, 207 us on 1), else 0 (all
//             hardware threads); GPU-only knobs stay at their defaults.
#pragma once

#include <string>
#include <vector>

#include "core/backend.hpp"

namespace moetune::kernels::cpu {

/// Family name and version recorded in tables and caches.
inline constexpr char kCpuFamily[] = "cpu_tiled";
inline constexpr int kCpuFamilyVersion = 1;
/// Block sizes the family accepts: powers of two in [kMinBlock, kMaxBlock].
inline constexpr int kMinBlock = 8;
inline constexpr int kMaxBlock = 256;
/// split_k values the family accepts: powers of two up to kMaxSplitK.
inline constexpr int kMaxSplitK = 8;
/// Below this many flops the default config runs on one thread (see the rule above).
inline constexpr double kSingleThreadFlops = 8e6;
/// Most worker threads one run may ask for.
inline constexpr int kMaxThreads = 256;

/// Ok, or the first reason cpu_tiled cannot run `config` for `problem` (kUnsupported, or the
/// problem's own validation error). Rules: problem valid; dtype bf16 or fp32; block_m/n/k powers
/// of two in [8, 256]; gemm1.block_m == gemm2.block_m (align pads each expert to block_m);
/// split_k a power of two <= 8 and <= ceil(depth / block_k) (every split gets a block_k step;
/// depth = K for GEMM1, I for GEMM2); group_m in [1, 64]; num_threads in [0, 256]; swap_ab off,
/// cluster 1x1, schedule auto, num_warps 4 and num_stages 2 (knobs this family lacks).
core::Status cpu_tiled_can_implement(core::MoeProblem const& problem,
                                     core::MoeConfig const& config);

/// The documented default (see the rule at the top of this file) for M = problem.num_tokens.
core::MoeConfig cpu_tiled_default_config(core::MoeProblem const& problem);

/// The config M = problem.num_tokens runs under lever batch_invariant: the default config with
/// split_k = 1 (which the default already has). That is enough on cpu_tiled:
/// NOTE: each output element is `acc += a * b` over its whole depth in increasing order, in fp32
/// without FMA (microkernel.cpp), whatever block_m, block_n, block_k, group_m and num_threads are
/// (they only choose which work item and thread sums it, and where in the register tile); only
/// split_k > 1 adds partial sums in another order, and table rows and the tuner may pick it. The
/// combine adds top_k in slot order. So the default rule's M-dependent tiles keep a token's bits
/// (tests/runtime/runner_batch_invariant_test.cpp). Fails as cpu_tiled_can_implement.
core::Result<core::MoeConfig> cpu_tiled_batch_invariant_config(core::MoeProblem const& problem);

/// The grid the tuner explores for (problem, M), before pruning by can_implement: uniform configs
/// over block_m {8,16,32,64} x block_n {32,64,128} x block_k {64,128,256} x threads {1, all};
/// split_k 2 variants (block_n 32/64) when P <= 16; group_m 8 variants when P >= 256; and mixed
/// GEMM1/GEMM2 tiles (block_n/block_k differ per GEMM). 88 to 160 configs.
std::vector<core::MoeConfig> cpu_tiled_search_space(core::MoeProblem const& problem);

/// The per-GEMM spaces the tuner searches, one per block_m {8,16,32,64}: for each GEMM (they run
/// as separate phases with their own tiles and threads), block_n {32,64,128} x block_k
/// {64,128,256} x threads {1, all}, plus split_k 2 variants (block_n 32/64) when P <= 16 and
/// group_m 8 variants when P >= 256: 18 to 36 per GEMM. base = the default config at that block_m.
std::vector<core::GemmSpace> cpu_tiled_gemm_search_space(core::MoeProblem const& problem);

/// The cpu_tiled backend: name "cpu", family "cpu_tiled", version 1.
class CpuBackend final : public core::Backend {
 public:
  std::string name() const override { return "cpu"; }
  std::string family() const override { return kCpuFamily; }
  int family_version() const override { return kCpuFamilyVersion; }
  core::DeviceInfo device() const override { return core::cpu_device_info(); }
  core::Status can_implement(core::MoeProblem const& problem,
                             core::MoeConfig const& config) const override {
    return cpu_tiled_can_implement(problem, config);
  }
  core::MoeConfig default_config(core::MoeProblem const& problem) const override {
    return cpu_tiled_default_config(problem);
  }
  core::Result<core::MoeConfig> batch_invariant_config(
      core::MoeProblem const& problem) const override {
    return cpu_tiled_batch_invariant_config(problem);
  }
  std::vector<core::MoeConfig> search_space(core::MoeProblem const& problem) const override {
    return cpu_tiled_search_space(problem);
  }
  std::vector<core::GemmSpace> gemm_search_space(core::MoeProblem const& problem) const override {
    return cpu_tiled_gemm_search_space(problem);
  }
};

}  // namespace moetune::kernels::cpu
