// cpu_tiled rules, default config and search space; see cpu_backend.hpp for the rules in words.
#include "kernels/cpu/cpu_backend.hpp"

#include <algorithm>
#include <bit>
#include <string>

namespace moetune::kernels::cpu {
namespace {

core::Error unsupported(std::string message) {
  return core::make_error(core::ErrorCode::kUnsupported, kCpuFamily, std::move(message));
}

std::string fmt_field(char const* gemm, char const* field, long long value) {
  return std::string(gemm) + "." + field + " = " + std::to_string(value);
}

core::Status check_block(char const* gemm, char const* field, int value) {
  if (value >= kMinBlock && value <= kMaxBlock &&
      std::has_single_bit(static_cast<unsigned>(value))) {
    return core::Status::Ok();
  }
  return unsupported(fmt_field(gemm, field, value) +
                     " is not a power of two in [8, 256]; use 8, 16, 32, 64, 128 or 256");
}

core::Status check_absent_knob(char const* gemm, char const* field, long long value,
                               long long allowed) {
  if (value == allowed) {
    return core::Status::Ok();
  }
  return unsupported(fmt_field(gemm, field, value) + " is a knob cpu_tiled does not have " +
                     "(allowed: " + std::to_string(allowed) + "); set it to " +
                     std::to_string(allowed) + " or use the cuda backend");
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

core::Status check_gemm(char const* gemm, core::KernelConfig const& k, int64_t depth,
                        char const* depth_name) {
  MOETUNE_RETURN_IF_ERROR(check_block(gemm, "tile.block_m", k.tile.block_m));
  MOETUNE_RETURN_IF_ERROR(check_block(gemm, "tile.block_n", k.tile.block_n));
  MOETUNE_RETURN_IF_ERROR(check_block(gemm, "tile.block_k", k.tile.block_k));
  if (k.tile.group_m < 1 || k.tile.group_m > 64) {
    return unsupported(fmt_field(gemm, "tile.group_m", k.tile.group_m) +
                       " is outside [1, 64]; use 1 (row-major raster) or 8");
  }
  int const split_k = k.pipeline.split_k;
  if (split_k < 1 || split_k > kMaxSplitK || !std::has_single_bit(static_cast<unsigned>(split_k))) {
    return unsupported(fmt_field(gemm, "pipeline.split_k", split_k) +
                       " is not one of 1, 2, 4, 8; use one of those");
  }
  int64_t const steps = ceil_div(depth, k.tile.block_k);
  if (split_k > steps) {
    return unsupported(
        fmt_field(gemm, "pipeline.split_k", split_k) + " exceeds ceil(" + depth_name +
        " / block_k) = " + std::to_string(steps) + " (" + depth_name + " = " +
        std::to_string(depth) + ", block_k = " + std::to_string(k.tile.block_k) +
        "); use split_k <= " + std::to_string(steps) + " so every split gets a block_k step");
  }
  if (k.launch.num_threads < 0 || k.launch.num_threads > kMaxThreads) {
    return unsupported(fmt_field(gemm, "launch.num_threads", k.launch.num_threads) +
                       " is outside [0, 256]; use 0 for all hardware threads");
  }
  MOETUNE_RETURN_IF_ERROR(check_absent_knob(gemm, "launch.swap_ab", k.launch.swap_ab, 0));
  MOETUNE_RETURN_IF_ERROR(check_absent_knob(gemm, "launch.cluster_m", k.launch.cluster_m, 1));
  MOETUNE_RETURN_IF_ERROR(check_absent_knob(gemm, "launch.cluster_n", k.launch.cluster_n, 1));
  if (k.launch.schedule != core::Schedule::kAuto) {
    return unsupported(std::string(gemm) +
                       ".launch.schedule = " + std::string(core::to_string(k.launch.schedule)) +
                       " is a knob cpu_tiled does not have (allowed: auto); set it to auto or " +
                       "use the cuda backend");
  }
  MOETUNE_RETURN_IF_ERROR(check_absent_knob(gemm, "pipeline.num_warps", k.pipeline.num_warps, 4));
  MOETUNE_RETURN_IF_ERROR(check_absent_knob(gemm, "pipeline.num_stages", k.pipeline.num_stages, 2));
  return core::Status::Ok();
}

/// P: mean token-expert pairs per expert, rounded up.
int64_t pairs_per_expert(core::MoeProblem const& p) {
  return p.num_experts > 0 ? ceil_div(p.num_tokens * p.top_k, p.num_experts) : 0;
}

int block_k_for(int64_t depth, int wanted) {
  int64_t const cap = std::max<int64_t>(
      kMinBlock,
      static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(depth, 1)))));
  return static_cast<int>(std::min<int64_t>(wanted, cap));
}

core::KernelConfig tile_config(int block_m, int block_n, int block_k, int group_m, int split_k,
                               int threads) {
  core::KernelConfig k;
  k.tile = {.block_m = block_m, .block_n = block_n, .block_k = block_k, .group_m = group_m};
  k.pipeline.split_k = split_k;
  k.launch.num_threads = threads;
  return k;
}

}  // namespace

core::Status cpu_tiled_can_implement(core::MoeProblem const& problem,
                                     core::MoeConfig const& config) {
  MOETUNE_RETURN_IF_ERROR(core::validate(problem));
  if (problem.dtype != core::DType::kBf16 && problem.dtype != core::DType::kFp32) {
    return unsupported("problem.dtype = " + std::string(core::to_string(problem.dtype)) +
                       " is not supported (allowed: bf16, fp32); use bf16 or fp32");
  }
  if (problem.quant != core::Quant::kNone &&
      (problem.dtype != core::DType::kBf16 || problem.hidden_size % 128 != 0 ||
       problem.intermediate_size % 128 != 0)) {
    return unsupported("problem.quant = " + std::string(core::to_string(problem.quant)) +
                       " needs dtype bf16 and K and I multiples of 128 (the 128-wide scale "
                       "groups); saw dtype " +
                       std::string(core::to_string(problem.dtype)) +
                       ", K = " + std::to_string(problem.hidden_size) +
                       ", I = " + std::to_string(problem.intermediate_size));
  }
  MOETUNE_RETURN_IF_ERROR(check_gemm("gemm1", config.gemm1, problem.hidden_size, "K"));
  MOETUNE_RETURN_IF_ERROR(check_gemm("gemm2", config.gemm2, problem.intermediate_size, "I"));
  if (config.gemm1.tile.block_m != config.gemm2.tile.block_m) {
    return unsupported(
        "gemm1.tile.block_m = " + std::to_string(config.gemm1.tile.block_m) +
        " differs from gemm2.tile.block_m = " + std::to_string(config.gemm2.tile.block_m) +
        "; they must be equal since align pads each expert to block_m; set both " +
        "to the same value");
  }
  return core::Status::Ok();
}

core::MoeConfig cpu_tiled_default_config(core::MoeProblem const& problem) {
  int64_t const p = pairs_per_expert(problem);
  int block_m = 64;
  for (int candidate : {8, 16, 32}) {
    if (p <= candidate) {
      block_m = candidate;
      break;
    }
  }
  int const group_m = p >= 256 ? 8 : 1;
  core::MoeConfig c;
  int const threads = core::flops(problem) < kSingleThreadFlops ? 1 : 0;
  c.gemm1 = tile_config(block_m, 64, block_k_for(problem.hidden_size, 128), group_m, 1, threads);
  c.gemm2 =
      tile_config(block_m, 64, block_k_for(problem.intermediate_size, 128), group_m, 1, threads);
  return c;
}

core::Result<core::MoeConfig> cpu_tiled_batch_invariant_config(core::MoeProblem const& problem) {
  if (problem.quant != core::Quant::kNone) {  // as on cuda: the lever covers bf16 and fp32 layers
    return unsupported("lever batch_invariant: quant " +
                       std::string(core::to_string(problem.quant)) +
                       " has no batch-invariant config (only bf16 and fp32 layers do); turn the "
                       "lever off for fp8 layers");
  }
  core::MoeConfig c = cpu_tiled_default_config(problem);
  c.gemm1.pipeline.split_k = 1;  // the one knob that changes an element's sum order
  c.gemm2.pipeline.split_k = 1;
  MOETUNE_RETURN_IF_ERROR(cpu_tiled_can_implement(problem, c));
  return c;
}

std::vector<core::MoeConfig> cpu_tiled_search_space(core::MoeProblem const& problem) {
  int64_t const p = pairs_per_expert(problem);
  std::vector<core::MoeConfig> space;
  for (int block_m : {8, 16, 32, 64}) {
    for (int threads : {1, 0}) {
      for (int block_n : {32, 64, 128}) {
        for (int block_k : {64, 128, 256}) {
          auto const k = tile_config(block_m, block_n, block_k, 1, 1, threads);
          space.push_back({k, k});
          if (p <= 16 && block_n <= 64) {
            auto const ks = tile_config(block_m, block_n, block_k, 1, 2, threads);
            space.push_back({ks, ks});
          }
          if (p >= 256) {
            auto const kg = tile_config(block_m, block_n, block_k, 8, 1, threads);
            space.push_back({kg, kg});
          }
        }
      }
    }
    // Mixed tiles: GEMM1 (N1 = 2I wide when gated, depth K) and GEMM2 (K wide, depth I) see
    // different shapes, so their best block_n/block_k may differ.
    for (auto [n1, k1] : {std::pair{64, 128}, std::pair{128, 64}}) {
      for (auto [n2, k2] : {std::pair{64, 256}, std::pair{128, 128}}) {
        space.push_back(
            {tile_config(block_m, n1, k1, 1, 1, 0), tile_config(block_m, n2, k2, 1, 1, 0)});
      }
    }
  }
  return space;
}

std::vector<core::GemmSpace> cpu_tiled_gemm_search_space(core::MoeProblem const& problem) {
  int64_t const p = pairs_per_expert(problem);
  core::MoeConfig const fallback = cpu_tiled_default_config(problem);
  std::vector<core::GemmSpace> out;
  for (int block_m : {8, 16, 32, 64}) {
    std::vector<core::KernelConfig> list;
    for (int threads : {1, 0}) {
      for (int block_n : {32, 64, 128}) {
        for (int block_k : {64, 128, 256}) {
          list.push_back(tile_config(block_m, block_n, block_k, 1, 1, threads));
          if (p <= 16 && block_n <= 64) {
            list.push_back(tile_config(block_m, block_n, block_k, 1, 2, threads));
          }
          if (p >= 256) list.push_back(tile_config(block_m, block_n, block_k, 8, 1, threads));
        }
      }
    }
    core::MoeConfig base = fallback;
    base.gemm1.tile.block_m = block_m;
    base.gemm2.tile.block_m = block_m;
    out.push_back({.block_m = block_m, .gemm1 = list, .gemm2 = list, .base = base});
  }
  return out;
}

}  // namespace moetune::kernels::cpu
