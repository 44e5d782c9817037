// DeviceOps of the cuda backend: sm90_gather kernels loaded per config (cubin cache; compiled by
// NVRTC only when `moetune prewarm` did not put them there), one device workspace allocated up
// front, launches on the caller's stream with no host synchronisation. Compiled only with
// MOETUNE_HAVE_CUDA; exercised on a GPU by tests/runtime/cuda/runner_cuda_test.cpp,
// examples/01_moe_runner and `moetune run --backend cuda` (`bench/device.sh runtime`).
#if defined(MOETUNE_HAVE_CUDA)

#include <cuda_runtime.h>

#include <algorithm>
#include <mutex>

#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/sm90_gather_launch.hpp"
#include "runtime/device_ops.hpp"

namespace moetune::runtime {
namespace {

namespace kc = kernels::cuda;

kc::MoeArgs moe_args(LayerArgs const& a) {
  return {.x = a.x,
          .topk_ids = a.topk_ids,
          .topk_weights = a.topk_weights,
          .w1 = a.w1,
          .w2 = a.w2,
          .out = a.out,
          .b1 = a.b1,
          .b2 = a.b2,
          .w1_scale = a.w1_scale,
          .w2_scale = a.w2_scale,
          .a1_scale = a.a1_scale,
          .a2_scale = a.a2_scale};
}

class CudaDeviceOps final : public DeviceOps {
 public:
  explicit CudaDeviceOps(kernels::FastPaths fp) : fast_paths_(fp) {}
  ~CudaDeviceOps() override {
    if (workspace_ != nullptr) cudaFree(workspace_);
  }
  core::Status reserve(core::MoeProblem const& p, int64_t max_tokens,
                       std::vector<core::MoeConfig> const& configs, bool capturing) override {
    core::MoeProblem pm = p;
    pm.num_tokens = max_tokens;
    size_t need = bytes_;
    for (auto const& c : configs) need = std::max(need, kc::sm90_gather_workspace_bytes(pm, c));
    if (need <= bytes_) return core::Status::Ok();
    if (capturing) {
      return core::make_error(core::ErrorCode::kUnsupported, "MoeRunner workspace",
                              "a config needs " + std::to_string(need) + " workspace bytes but " +
                                  std::to_string(bytes_) + " are held, and growing it during " +
                                  "CUDA graph capture is refused; run it once before capturing");
    }
    // Off the hot path (create, or the first use of a new config): wait for launches that may
    // still read the old buffer before freeing it.
    MOETUNE_CUDA_CHECK(cudaDeviceSynchronize());
    if (workspace_ != nullptr) MOETUNE_CUDA_CHECK(cudaFree(workspace_));
    workspace_ = nullptr;
    bytes_ = 0;
    MOETUNE_CUDA_CHECK(cudaMalloc(&workspace_, need));
    bytes_ = need;
    return core::Status::Ok();
  }
  core::Result<Launchable> prepare(core::MoeProblem const& p, core::MoeConfig const& c,
                                   bool* compiled) override {
    auto k = kc::load_sm90_gather(p, c);
    if (!k.ok()) return k.error();
    if (compiled) *compiled = !(*k)->from_cache && (*k)->compile_ms > 0;
    return Launchable(*k);
  }
  core::Status launch(core::MoeProblem const& p, core::MoeConfig const& c, Launchable const& l,
                      LayerArgs const& a, void* stream) override {
    // The launchable carries the config's kernels and their geometry: nothing derived per call.
    auto const* k = static_cast<kc::Sm90GatherKernels const*>(l.get());
    size_t const need = kc::sm90_gather_workspace_bytes(*k, p);
    if (a.workspace.alloc != nullptr) return launch_in_caller_workspace(p, *k, a, need, stream);
    if (need > bytes_) {
      return core::make_error(core::ErrorCode::kInvalidArgument, "MoeRunner::run",
                              "config needs " + std::to_string(need) + " workspace bytes but " +
                                  std::to_string(bytes_) + " are held; raise max_tokens");
    }
    kc::MoeArgs const args = moe_args(a);
    return kc::launch_sm90_gather(*k, p, args, workspace_, bytes_,
                                  static_cast<cudaStream_t>(stream), kc::kStageAll, fast_paths_);
  }
  /// One launch in scratch the caller allocates for it (torch's caching allocator): stream-ordered
  /// and capture-safe, so each stream and each CUDA graph has its own.
  core::Status launch_in_caller_workspace(core::MoeProblem const& p, kc::Sm90GatherKernels const& k,
                                          LayerArgs const& a, size_t bytes, void* stream) {
    void* ws = a.workspace.alloc(a.workspace.ctx, bytes);  // bytes > 0, even at M = 0
    if (ws == nullptr) {
      return core::make_error(core::ErrorCode::kIo, "MoeRunner::run",
                              "the caller's workspace allocator returned no memory for " +
                                  std::to_string(bytes) + " bytes");
    }
    auto cs = static_cast<cudaStream_t>(stream);
    kc::MoeArgs const args = moe_args(a);
    return kc::launch_sm90_gather(k, p, args, ws, bytes, cs, kc::kStageAll, fast_paths_);
  }
  bool stream_capturing(void* stream) const override {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &status) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return status != cudaStreamCaptureStatusNone;
  }
  size_t workspace_bytes() const override { return bytes_; }

 private:
  kernels::FastPaths fast_paths_;
  void* workspace_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace

core::Result<std::unique_ptr<DeviceOps>> make_cuda_device_ops(core::Backend const&,
                                                              kernels::FastPaths const& fp) {
  auto device = kc::query_cuda_device();  // fails with "no CUDA device is visible; ..."
  if (!device.ok()) return device.error();
  return std::unique_ptr<DeviceOps>(std::make_unique<CudaDeviceOps>(fp));
}

}  // namespace moetune::runtime

#endif  // MOETUNE_HAVE_CUDA
