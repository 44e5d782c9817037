// Backend: what the resolver, tuner and bench need from a kernel family, with no CUDA in sight.
// Implementations: kernels/cpu (cpu_tiled) and kernels/cuda (sm90_gather).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"

namespace moetune::core {

/// The per-GEMM search space at one block_m (align pads each expert's rows to it; a family may
/// let GEMM1 walk those blocks in smaller tiles, e.g. sm90_gather's 128-row GEMM1 under a GEMM2 of
/// 256). The tuner searches GEMM1 over `gemm1` with GEMM2 fixed, then GEMM2 over `gemm2` with
/// GEMM1 fixed at the winner, instead of the product of the two lists.
struct GemmSpace {
  int block_m = 0;
  std::vector<KernelConfig> gemm1;  ///< tile.block_m == block_m, or a divisor the family allows
  std::vector<KernelConfig> gemm2;  ///< every entry has tile.block_m == block_m
  /// A reasonable whole config at this block_m: GEMM1's search runs with this GEMM2. Best kept
  /// the same at every M (a compiling backend then reuses stage-1 kernels across buckets).
  MoeConfig base;
};

/// The per-GEMM spaces of a joint space: per gemm1.tile.block_m (in order of first appearance),
/// the distinct GEMM1 and GEMM2 configs, and the first config as the base.
inline std::vector<GemmSpace> gemm_spaces_of(std::vector<MoeConfig> const& joint) {
  std::vector<GemmSpace> out;
  auto add = [](std::vector<KernelConfig>& list, KernelConfig const& k) {
    if (std::find(list.begin(), list.end(), k) == list.end()) list.push_back(k);
  };
  for (MoeConfig const& c : joint) {
    int const bm = c.gemm1.tile.block_m;
    if (c.gemm2.tile.block_m != bm) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](auto const& s) { return s.block_m == bm; });
    if (it == out.end())
      it = out.insert(out.end(), GemmSpace{.block_m = bm, .gemm1 = {}, .gemm2 = {}, .base = c});
    add(it->gemm1, c.gemm1);
    add(it->gemm2, c.gemm2);
  }
  return out;
}

/// One backend = one kernel family on one kind of device.
class Backend {
 public:
  virtual ~Backend() = default;
  /// "cpu" | "cuda".
  virtual std::string name() const = 0;
  /// Kernel family and its version; tables and caches record both.
  virtual std::string family() const = 0;
  virtual int family_version() const = 0;
  virtual DeviceInfo device() const = 0;
  /// Ok, or the reason this family cannot run `config` for `problem` (smem, registers,
  /// divisibility, alignment, a knob the family lacks set to a non-default value).
  virtual Status can_implement(MoeProblem const& problem, MoeConfig const& config) const = 0;
  /// The documented default config for (problem, M = problem.num_tokens).
  virtual MoeConfig default_config(MoeProblem const& problem) const = 0;
  /// The config M = problem.num_tokens runs under lever batch_invariant (docs/levers.md): one in
  /// which every output element is summed in one K order by one instruction family whatever M
  /// is, with no split-K, so a token's output bits do not depend on the other tokens of its
  /// batch. Fails (kUnsupported, naming the family and what to do) where the family has none
  /// for `problem`; the default says the family has none at all.
  virtual Result<MoeConfig> batch_invariant_config(MoeProblem const& problem) const {
    (void)problem;
    return make_error(ErrorCode::kUnsupported, family(),
                      "has no batch-invariant config (lever batch_invariant); turn the lever off "
                      "or use the cpu or cuda backend");
  }
  /// The search space for (problem, M), before feasibility pruning.
  virtual std::vector<MoeConfig> search_space(MoeProblem const& problem) const = 0;
  /// The per-GEMM spaces for (problem, M), one per block_m, before feasibility pruning. The
  /// default derives them from search_space(): per gemm1.tile.block_m (in order of first
  /// appearance), the distinct GEMM1 and GEMM2 configs, and the first config as the base. A
  /// family whose GEMMs cannot be chosen apart returns {} and is tuned on search_space() jointly.
  virtual std::vector<GemmSpace> gemm_search_space(MoeProblem const& problem) const {
    return gemm_spaces_of(search_space(problem));
  }
};

}  // namespace moetune::core
