// CudaTestbed: the Testbed of the cuda backend (GPU 0). Inputs are generated on the device from a
// counter-based RNG (same seed, same bits; fp8 problems: e4m3 weights and scales, CudaFp8Layer);
// outputs and the workspace (all but its zero words) are poisoned before every checked run; the
// reference is the fp32 GPU reference over a sample of tokens (all tokens when M <= 256), and the
// full output is checked for unwritten or non-finite elements. Timing follows the bench protocol:
// the pipeline captured in one CUDA graph, the L2 flushed (256 MiB read) before every replay,
// warm-up, per-replay events.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "core/routing.hpp"
#include "kernels/cuda/cuda_testbed_fp8.hpp"
#include "kernels/cuda/sm90_gather_launch.hpp"
#include "kernels/testbed.hpp"

namespace moetune::kernels::cuda {

class CudaBackend;

class CudaTestbed final : public Testbed {
 public:
  static core::Result<std::unique_ptr<CudaTestbed>> create();
  ~CudaTestbed() override;

  core::Backend const& backend() const override;
  core::Status prepare(core::MoeProblem const& problem, core::RoutingProfile const& routing,
                       uint64_t seed) override;
  core::Result<CheckResult> check(core::MoeConfig const& config) override;
  core::Result<TimingResult> time(core::MoeConfig const& config, int warmup, int reps) override;

  /// Times only `stages` (a StageMask) of `config`, after one full run that fills the workspace.
  core::Result<TimingResult> time_stages(core::MoeConfig const& config, unsigned stages, int warmup,
                                         int reps);
  /// The fast paths launches take (levers); also applied to the backend's can_implement.
  void set_fast_paths(FastPaths const& fp) override;
  /// Experts with at least one token in the prepared routing.
  int64_t experts_hit() const { return experts_hit_; }
  core::MoeProblem const& problem() const { return problem_; }
  /// ptxas resource report of the last loaded config.
  std::string const& last_ptxas_log() const { return last_ptxas_; }
  /// Host copies (as float) of the prepared inputs, for the CPU fp64 reference in tests.
  struct HostInputs {
    std::vector<float> x, w1, w2, topk_weights;
    std::vector<int32_t> topk_ids;
  };
  core::Result<HostInputs> download_inputs() const;
  /// The output of the last check() as bf16 bits [M, K].
  std::vector<uint16_t> const& last_output() const { return last_out_; }
  /// JIT compile (or cache load) without running: for prewarm and parallel compiles.
  core::Status compile(core::MoeConfig const& config);
  /// precompile_sm90_gather for the prepared problem and the testbed's fast paths.
  std::vector<core::Status> precompile(std::vector<core::MoeConfig> const& configs) override;
  /// Arms the next check() to write one bf16 value (kWrongOutputValue or NaN) into the device
  /// output element 0 after the kernels ran (cudaMemcpy), before the output is read back.
  bool corrupt_next_output(OutputFault fault) override {
    output_fault_ = fault;
    return true;
  }

 private:
  CudaTestbed() = default;
  core::Status ensure_workspace(size_t bytes);
  core::Status run_reference();
  /// bf16(scale * N(0, 1)) into n elements of buf from `seed` (moe_fill_normal_kernel).
  core::Status fill_normal(void* buf, int64_t n, uint64_t seed, float scale);
  /// w1_ and w2_ of problem p from `seed`: bf16, or e4m3 with scales (CudaFp8Layer).
  core::Status draw_weights(core::MoeProblem const& p, uint64_t seed);
  /// The launch's tensors: the prepared inputs, the output and (fp8) the drawn scales.
  MoeArgs launch_args() const;
  core::Result<std::shared_ptr<Sm90GatherKernels const>> kernels_for(core::MoeConfig const& c);

  std::unique_ptr<CudaBackend> backend_;
  core::MoeProblem problem_;
  int64_t experts_hit_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaKernel_t ref1_ = nullptr, ref2_ = nullptr, flush_ = nullptr, fill_ = nullptr;
  void* x_ = nullptr;
  void* w1_ = nullptr;  // bf16, or e4m3 for an fp8 problem (quant)
  void* w2_ = nullptr;
  std::unique_ptr<CudaFp8Layer> fp8_;  // fp8 problems: the scales and the fp8 reference
  void* ids_ = nullptr;
  void* weights_ = nullptr;
  void* out_ = nullptr;
  void* ws_ = nullptr;
  size_t ws_bytes_ = 0;
  void* flush_buf_ = nullptr;
  void* sink_ = nullptr;
  std::vector<int32_t> sample_tokens_;
  std::vector<float> ref_out_;  // [sample, K]
  bool ref_valid_ = false;
  std::string last_ptxas_;
  std::vector<uint16_t> last_out_;
  FastPaths fast_paths_;
  OutputFault output_fault_ = OutputFault::kNone;
  size_t w1_cap_ = 0, w2_cap_ = 0, x_cap_ = 0, ids_cap_ = 0, wts_cap_ = 0, out_cap_ = 0;
  uint64_t w_seed_ = 0;  // the seed w1_ / w2_ were drawn from
};

/// NVRTC-compiles the kernels of `configs` for `problem` into the cubin cache on a pool of
/// `threads` threads (0 = hardware_concurrency()), each distinct module once. Makes no CUDA call
/// and needs no GPU: a config's first run loads its module from the cache. Per config, in order:
/// can_implement's reason, the NVRTC error (where "jit"), or ok. compile_module is thread-safe.
std::vector<core::Status> precompile_sm90_gather(core::MoeProblem const& problem,
                                                 std::vector<core::MoeConfig> const& configs,
                                                 FastPaths const& fast_paths = {},
                                                 unsigned threads = 0);

}  // namespace moetune::kernels::cuda
