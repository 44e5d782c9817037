// DeviceOps: what MoeRunner needs from a device, behind one small interface so the runner has no
// CUDA in it: hold a workspace sized up front, make a config launchable before serving it (cuda:
// load its kernels from the cubin cache, compiling only when prewarm did not), launch with no
// allocation, and say whether a stream is being captured into a CUDA graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/backend.hpp"
#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "kernels/fast_paths.hpp"
#include "moetune/moe_runner.hpp"

namespace moetune::runtime {

/// Pointers of one call (host pointers on cpu, device pointers on cuda).
struct LayerArgs {
  void const* x = nullptr;
  int32_t const* topk_ids = nullptr;
  float const* topk_weights = nullptr;
  void const* w1 = nullptr;
  void const* w2 = nullptr;
  void* out = nullptr;
  void const* b1 = nullptr;  ///< [E, N1] when the problem has biases, else null
  void const* b2 = nullptr;  ///< [E, K] likewise
  /// fp8 problems' scales (RunArgs says which); null otherwise.
  float const* w1_scale = nullptr;
  float const* w2_scale = nullptr;
  float const* a1_scale = nullptr;
  float const* a2_scale = nullptr;
  /// Set (caller_workspace runners): the launch takes its scratch from here, not the held one.
  WorkspaceSource workspace;
};

/// A config made ready to launch (cuda: its loaded kernels); opaque to the runner.
using Launchable = std::shared_ptr<void const>;

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;
  /// Grows the workspace to fit every config in `configs` at M = max_tokens (never shrinks).
  /// Not thread-safe against launch(): the runner calls it under its lock, off the hot path.
  /// When growth is needed while `capturing` (a CUDA graph capture), it fails instead: growing
  /// synchronises the device, which would break the capture.
  virtual core::Status reserve(core::MoeProblem const& problem, int64_t max_tokens,
                               std::vector<core::MoeConfig> const& configs,
                               bool capturing = false) = 0;
  /// Makes `config` launchable (cuda: load_sm90_gather; cpu: nothing). `compiled` is set when a
  /// compiler had to run (the cubin was not in the cache: serving compiled).
  virtual core::Result<Launchable> prepare(core::MoeProblem const& problem,
                                           core::MoeConfig const& config, bool* compiled) = 0;
  /// Launches the layer for M = problem.num_tokens. Thread-safe (cpu: serialised on the
  /// workspace; cuda: stream-ordered on the one workspace).
  virtual core::Status launch(core::MoeProblem const& problem, core::MoeConfig const& config,
                              Launchable const& launchable, LayerArgs const& args,
                              void* stream) = 0;
  /// True when `stream` is being captured into a CUDA graph (always false on cpu).
  virtual bool stream_capturing(void* stream) const = 0;
  virtual size_t workspace_bytes() const = 0;
};

/// The ops of backend "cpu" or "cuda" (cuda only when built with MOETUNE_HAVE_CUDA); every launch
/// takes `fast_paths`.
core::Result<std::unique_ptr<DeviceOps>> make_device_ops(std::string const& backend_name,
                                                         core::Backend const& backend,
                                                         kernels::FastPaths const& fast_paths);

}  // namespace moetune::runtime
