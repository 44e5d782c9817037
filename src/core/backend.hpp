// Backend: what the resolver, tuner and bench need from a kernel family, with no CUDA in sight.
// Implementations: kernels/cpu (cpu_tiled) and kernels/cuda (sm90_gather).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"

namespace moetune::core {

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
  /// The search space for (problem, M), before feasibility pruning.
  virtual std::vector<MoeConfig> search_space(MoeProblem const& problem) const = 0;
};

}  // namespace moetune::core
