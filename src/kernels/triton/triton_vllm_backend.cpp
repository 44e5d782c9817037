// triton_vllm rules, default config and search space; see triton_vllm_backend.hpp. Every message
// here is python/moetune/tuner/triton_rules.py's, word for word (the shared cases check it).
#include "kernels/triton/triton_vllm_backend.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdlib>
#include <map>

namespace moetune::kernels::triton {
namespace {

/// vLLM 0.33.0's CUDA tuner space (benchmarks/kernels/benchmark_moe.py).
constexpr int kBlockM[] = {16, 32, 64, 128, 256};
constexpr int kBlockN[] = {32, 64, 128, 256};
constexpr int kBlockK[] = {64, 128, 256};
constexpr int kGroupM[] = {1, 16, 32, 64};
constexpr int kNumWarps[] = {4, 8};
constexpr int kNumStages[] = {2, 3, 4, 5};
constexpr int kMinBlock = 16;
constexpr int64_t kBf16Bytes = 2;
constexpr int64_t kFp8Bytes = 1;
constexpr int64_t kFp32Bytes = 4;
constexpr int kFp8Group = 128;     // fp8_block's weight block and activation group
constexpr int kFp8MinBlockK = 32;  // Triton 3.6's min_dot_size for 8-bit operands
constexpr int kFp8MinSm = 89;      // Triton 3.6 gives fp8e4nv (e4m3) to sm_89 and later only

std::map<std::string, int64_t> const& smem_limits() {
  static std::map<std::string, int64_t> const limits = {
      {"cpu", 232448},   {"sm_80", 166912}, {"sm_86", 101376}, {"sm_87", 166912},
      {"sm_89", 101376}, {"sm_90", 232448}, {"sm_90a", 232448}};
  return limits;
}

core::Error unsupported(std::string message) {
  return core::make_error(core::ErrorCode::kUnsupported, kTritonVllmFamily, std::move(message));
}

core::Status bad(std::string const& field, std::string const& value, std::string const& why) {
  return unsupported(field + " = " + value + " " + why);
}

int64_t next_pow2(int64_t n) {
  return static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(n, 1))));
}

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// arch's compute capability as one number (sm_90a -> 90; "cpu" is judged as sm_90), 0 when
/// arch names none (triton_rules.sm_of).
int sm_of(std::string const& arch) {
  if (arch == "cpu") return 90;
  if (!arch.starts_with("sm_")) return 0;
  std::string digits = arch.substr(3);
  while (!digits.empty() && digits.back() == 'a') digits.pop_back();
  auto const is_digit = [](unsigned char c) { return std::isdigit(c) != 0; };
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), is_digit)) return 0;
  return std::stoi(digits);
}

std::string short_row(core::KernelConfig const& k) {
  return "m" + std::to_string(k.tile.block_m) + "n" + std::to_string(k.tile.block_n) + "k" +
         std::to_string(k.tile.block_k) + "g" + std::to_string(k.tile.group_m) + "w" +
         std::to_string(k.pipeline.num_warps) + "s" + std::to_string(k.pipeline.num_stages);
}

core::KernelConfig row(int bm, int bn, int bk, int group_m, int warps, int stages) {
  core::KernelConfig k;
  k.tile = {.block_m = bm, .block_n = bn, .block_k = bk, .group_m = group_m};
  k.pipeline.num_warps = warps;
  k.pipeline.num_stages = stages;
  return k;
}

/// The grid's M-blocks vLLM launches (num_pid_m): cdiv(EM, block_m), EM from
/// _prepare_expert_assignment, moe_align_block_size's buffer and the small-batch cut.
int64_t num_m_blocks(core::MoeProblem const& p, int block_m) {
  int64_t const pairs = p.num_tokens * p.top_k;
  if (pairs * 4 <= p.num_experts) return pairs;  // vLLM's naive assignment
  int64_t em = pairs + p.num_experts * (block_m - 1);
  if (pairs < p.num_experts) em = std::min(pairs * block_m, em);
  if (p.num_tokens < block_m) em = std::min(em, pairs * block_m);
  return cdiv(em, block_m);
}

/// triton_rules.prior_distance: power-of-two steps in each block size and num_warps, one per
/// stage, one for another GROUP_SIZE_M.
int prior_distance(core::KernelConfig const& k, core::KernelConfig const& d) {
  auto steps = [](int a, int b) {
    return std::abs(static_cast<int>(std::bit_width(static_cast<unsigned>(a))) -
                    static_cast<int>(std::bit_width(static_cast<unsigned>(b))));
  };
  return steps(k.tile.block_m, d.tile.block_m) + steps(k.tile.block_n, d.tile.block_n) +
         steps(k.tile.block_k, d.tile.block_k) + steps(k.pipeline.num_warps, d.pipeline.num_warps) +
         std::abs(k.pipeline.num_stages - d.pipeline.num_stages) +
         (k.tile.group_m != d.tile.group_m ? 1 : 0);
}

core::Status check_problem(core::MoeProblem const& p) {
  MOETUNE_RETURN_IF_ERROR(core::validate(p));
  if (p.dtype != core::DType::kBf16) {
    return bad("problem.dtype", std::string(core::to_string(p.dtype)),
               "is not run by triton_vllm (bf16 only); tune a bf16 problem");
  }
  if (p.activation != core::Activation::kSiluGated && p.activation != core::Activation::kRelu2) {
    return bad("problem.activation", std::string(core::to_string(p.activation)),
               "is not run by triton_vllm (silu or relu2); use silu or relu2");
  }
  int const sm = sm_of(p.arch);
  if (p.quant != core::Quant::kNone && sm > 0 && sm < kFp8MinSm) {
    return bad("problem.arch", p.arch,
               "has no e4m3 (fp8e4nv) in Triton, which needs sm_" + std::to_string(kFp8MinSm) +
                   " or later; tune the " + std::string(core::to_string(p.quant)) +
                   " layer on an sm_89 or sm_90 GPU");
  }
  return core::Status::Ok();
}

core::Status check_launch(core::LaunchConfig const& l) {
  auto knob = [](char const* field, std::string const& value, char const* allowed) {
    return bad(
        std::string("gemm1.launch.") + field, value,
        std::string("is a knob triton_vllm does not have (allowed: ") + allowed + "); set it back");
  };
  if (l.swap_ab) return knob("swap_ab", "1", "0");
  if (l.cluster_m != 1) return knob("cluster_m", std::to_string(l.cluster_m), "1");
  if (l.cluster_n != 1) return knob("cluster_n", std::to_string(l.cluster_n), "1");
  if (l.schedule != core::Schedule::kAuto) {
    return knob("schedule", std::string(core::to_string(l.schedule)), "auto");
  }
  if (l.num_threads != 0) return knob("num_threads", std::to_string(l.num_threads), "0");
  return core::Status::Ok();
}

}  // namespace

int64_t triton_vllm_smem_limit(std::string const& arch) {
  auto it = smem_limits().find(arch);
  return it == smem_limits().end() ? 0 : it->second;
}

int64_t triton_vllm_smem_bytes(std::string const& arch, core::KernelConfig const& k,
                               core::Quant quant) {
  bool const fp8 = quant != core::Quant::kNone;
  bool const block = quant == core::Quant::kFp8Block;
  int64_t const bm = k.tile.block_m, bn = k.tile.block_n;
  // vLLM cuts fp8_block's BLOCK_SIZE_K to the group, and swaps A and B of an fp8 tile on sm_90
  // at block_m < 64, block_n >= 64 (enable_swap_ab), whose MMA's M is then block_n.
  int64_t const bk = block ? std::min(k.tile.block_k, kFp8Group) : k.tile.block_k;
  bool const swap = fp8 && sm_of(arch) == 90 && bm < 64 && bn >= 64;
  bool const wgmma = sm_of(arch) == 90 && (bm >= 64 || swap);
  int const stages = k.pipeline.num_stages;
  int64_t const buffers = wgmma ? stages : std::max(stages - 1, 1);
  int64_t operands = buffers * (bm + bn) * bk * (fp8 ? kFp8Bytes : kBf16Bytes);
  int64_t const longest = std::max(bm, bn);
  if (block && longest >= int64_t{32} * k.pipeline.num_warps) operands += kFp32Bytes * longest;
  return std::max(operands, bm * bn * kBf16Bytes);
}

core::Status triton_vllm_can_implement(core::MoeProblem const& problem,
                                       core::MoeConfig const& config, int64_t smem_limit_bytes) {
  MOETUNE_RETURN_IF_ERROR(check_problem(problem));
  if (smem_limit_bytes == 0) {
    smem_limit_bytes = triton_vllm_smem_limit(problem.arch);
    if (smem_limit_bytes == 0) {
      std::string known;
      for (auto const& [arch, limit] : smem_limits()) known += (known.empty() ? "" : ", ") + arch;
      return bad("problem.arch", problem.arch,
                 "has no shared-memory limit known to triton_vllm; use one of " + known);
    }
  }
  if (!(config.gemm2 == config.gemm1)) {
    return unsupported(
        "gemm2 differs from gemm1; vLLM reads one row for both GEMMs: set gemm2 to gemm1");
  }
  core::KernelConfig const& k = config.gemm1;
  for (auto [field, value] :
       {std::pair{"block_m", k.tile.block_m}, std::pair{"block_n", k.tile.block_n},
        std::pair{"block_k", k.tile.block_k}}) {
    if (value < kMinBlock || !std::has_single_bit(static_cast<unsigned>(value))) {
      return bad(std::string("gemm1.tile.") + field, std::to_string(value),
                 "is not a power of two >= 16 (tl.arange needs a power of two, tl.dot at least "
                 "16); use 16, 32, 64, 128 or 256");
    }
  }
  if (problem.quant != core::Quant::kNone && k.tile.block_k < kFp8MinBlockK) {
    return bad("gemm1.tile.block_k", std::to_string(k.tile.block_k),
               "is below 32, the smallest K of Triton's tl.dot on 8-bit (fp8) operands; use 32, "
               "64, 128 or 256");
  }
  if (k.tile.group_m < 1) {
    return bad("gemm1.tile.group_m", std::to_string(k.tile.group_m),
               "is below 1; use 1, 16, 32 or 64");
  }
  if (k.pipeline.num_warps != 4 && k.pipeline.num_warps != 8) {
    return bad("gemm1.pipeline.num_warps", std::to_string(k.pipeline.num_warps),
               "is not 4 or 8 (vLLM's tuner space); use 4 or 8");
  }
  if (k.pipeline.num_stages < 1) {
    return bad("gemm1.pipeline.num_stages", std::to_string(k.pipeline.num_stages),
               "is below 1; use 2, 3, 4 or 5");
  }
  if (k.pipeline.split_k != 1) {
    return bad("gemm1.pipeline.split_k", std::to_string(k.pipeline.split_k),
               "is ignored: vLLM 0.33.0 launches with SPLIT_K = 1; use 1");
  }
  MOETUNE_RETURN_IF_ERROR(check_launch(k.launch));
  int64_t const need = triton_vllm_smem_bytes(problem.arch, k, problem.quant);
  if (need > smem_limit_bytes) {
    return unsupported("shared memory = " + std::to_string(need) + " bytes for " + short_row(k) +
                       " on " + problem.arch + " exceeds the " + std::to_string(smem_limit_bytes) +
                       " a block may use; use fewer stages or smaller tiles");
  }
  return core::Status::Ok();
}

core::MoeConfig triton_vllm_default_config(core::MoeProblem const& problem) {
  int64_t const m = problem.num_tokens;
  if (problem.quant == core::Quant::kFp8Block) {
    return core::uniform_config(
        row(m <= 64 ? 16 : 64, m <= 8 ? 64 : 128, kFp8Group, m <= 16 ? 1 : 32, 4, m <= 4 ? 4 : 3));
  }
  int const bm = m <= 32 ? 16 : m <= 96 ? 32 : m <= 512 ? 64 : 128;
  int const bk = m <= 64 || problem.quant == core::Quant::kFp8Tensor ? 128 : 64;
  int const group_m = m / std::max<int64_t>(problem.num_experts, 1) > 128 ? 16 : 1;
  return core::uniform_config(
      row(bm, m <= 64 ? 64 : 128, bk, group_m, m <= 128 ? 4 : 8, m <= 32 ? 4 : 3));
}

std::vector<core::MoeConfig> triton_vllm_search_space(core::MoeProblem const& problem) {
  core::KernelConfig const fallback = triton_vllm_default_config(problem).gemm1;
  int64_t const cap_n = std::max<int64_t>(
      kBlockN[0], next_pow2(std::max(core::gemm1_n(problem), problem.hidden_size)));
  int64_t const cap_k = std::max<int64_t>(
      kBlockK[0], next_pow2(std::max(problem.hidden_size, problem.intermediate_size)));
  // fp8_block: vLLM's tuner keeps block_n and block_k that are multiples of the group; block_k
  // 256 is launched as 128, so only 128 stays.
  bool const block = problem.quant == core::Quant::kFp8Block;
  std::vector<int> block_ns, block_ks;
  for (int bn : kBlockN) {
    if (bn <= cap_n && (!block || bn % kFp8Group == 0)) block_ns.push_back(bn);
  }
  for (int bk : kBlockK) {
    if (bk <= cap_k && (!block || bk == kFp8Group)) block_ks.push_back(bk);
  }
  bool const interpreted = problem.arch == "cpu";
  std::vector<core::MoeConfig> out;
  for (int bm : kBlockM) {
    // GROUP_SIZE_M at or above the grid's M-blocks all give the same raster: keep the smallest.
    int64_t const blocks = num_m_blocks(problem, bm);
    std::vector<int> groups;
    for (int g : kGroupM) {
      if (g < blocks) groups.push_back(g);
    }
    for (int g : kGroupM) {
      if (g >= blocks) {
        groups.push_back(g);
        break;
      }
    }
    for (int bn : block_ns) {
      for (int bk : block_ks) {
        if (interpreted) {  // warps, stages and the raster do nothing in the interpreter
          out.push_back(
              core::uniform_config(row(bm, bn, bk, fallback.tile.group_m,
                                       fallback.pipeline.num_warps, fallback.pipeline.num_stages)));
          continue;
        }
        for (int g : groups) {
          for (int w : kNumWarps) {
            for (int s : kNumStages) out.push_back(core::uniform_config(row(bm, bn, bk, g, w, s)));
          }
        }
      }
    }
  }
  // Nearest the default row first; product order among equals (a budget that stops the
  // screening early has then searched around vLLM's own choice for this M).
  std::stable_sort(out.begin(), out.end(), [&](core::MoeConfig const& a, core::MoeConfig const& b) {
    return prior_distance(a.gemm1, fallback) < prior_distance(b.gemm1, fallback);
  });
  return out;
}

}  // namespace moetune::kernels::triton
