// DeviceOps of the cpu backend (run_cpu_moe on host pointers) and the factory; the cuda ops are
// in device_ops_cuda.cpp.
#include <algorithm>
#include <mutex>

#include "core/device_info.hpp"
#include "kernels/cpu/cpu_moe.hpp"
#include "runtime/device_ops.hpp"

namespace moetune::runtime {

#if defined(MOETUNE_HAVE_CUDA)
core::Result<std::unique_ptr<DeviceOps>> make_cuda_device_ops(core::Backend const& backend,
                                                              kernels::FastPaths const& fp);
#endif

namespace {

/// The cpu workspace: its large buffers are reserved for max_tokens with the largest block_m of
/// the known configs, so runs up to max_tokens reuse them. run_cpu_moe itself still allocates a
/// cursor array and starts its worker threads per call (kernels/cpu/cpu_moe.cpp).
class CpuDeviceOps final : public DeviceOps {
 public:
  explicit CpuDeviceOps(kernels::FastPaths fp) : fast_paths_(fp) {}
  core::Status reserve(core::MoeProblem const& p, int64_t max_tokens,
                       std::vector<core::MoeConfig> const& configs, bool) override {
    int block_m = 8;
    int split_k = 1;
    for (auto const& c : configs) {
      block_m = std::max(block_m, c.gemm1.tile.block_m);
      split_k = std::max({split_k, c.gemm1.pipeline.split_k, c.gemm2.pipeline.split_k});
    }
    size_t const pairs = static_cast<size_t>(max_tokens * p.top_k);
    size_t const padded = pairs + static_cast<size_t>(p.num_experts) * (block_m - 1);
    size_t const cols = static_cast<size_t>(std::max(core::gemm1_n(p), p.hidden_size));
    double const bytes = static_cast<double>(padded) * (4.0 + 4.0 * p.intermediate_size) +
                         static_cast<double>(pairs) * 4.0 * p.hidden_size +
                         (split_k > 1 ? 4.0 * split_k * padded * cols : 0.0);
    MOETUNE_RETURN_IF_ERROR(core::check_host_bytes(
        bytes, "MoeRunner", "the cpu workspace for max_tokens=" + std::to_string(max_tokens),
        "lower max_tokens (the largest M served)"));
    std::lock_guard<std::mutex> lock(mu_);
    try {
      size_t const partials = split_k > 1 ? static_cast<size_t>(split_k) * padded * cols : 0;
      reserve_buffers(p, padded, pairs, partials);
    } catch (std::exception const& e) {  // bad_alloc, length_error: refused, not a crash
      return core::make_error(core::ErrorCode::kInvalidArgument, "MoeRunner",
                              std::string("cannot allocate the cpu workspace for max_tokens=") +
                                  std::to_string(max_tokens) + " (" + e.what() +
                                  "); lower max_tokens");
    }
    bytes_ = ws_.sorted_pairs.capacity() * 4 + ws_.inter_bf16.capacity() * 2 +
             ws_.inter_f32.capacity() * 4 + ws_.pair_out.capacity() * 4 +
             ws_.partials.capacity() * 4;
    return core::Status::Ok();
  }

  core::Result<Launchable> prepare(core::MoeProblem const&, core::MoeConfig const&,
                                   bool* compiled) override {
    if (compiled) *compiled = false;
    return Launchable{};
  }
  core::Status launch(core::MoeProblem const& p, core::MoeConfig const& config, Launchable const&,
                      LayerArgs const& a, void*) override {
    kernels::cpu::CpuMoeArgs args{.x = a.x,
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
    std::lock_guard<std::mutex> lock(mu_);
    return kernels::cpu::run_cpu_moe(p, config, args, ws_, fast_paths_);
  }
  bool stream_capturing(void*) const override { return false; }
  size_t workspace_bytes() const override { return bytes_; }

 private:
  void reserve_buffers(core::MoeProblem const& p, size_t padded, size_t pairs, size_t partials) {
    ws_.expert_counts.reserve(p.num_experts);
    ws_.expert_offsets.reserve(p.num_experts + 1);
    ws_.sorted_pairs.reserve(padded);
    size_t const inter = padded * static_cast<size_t>(p.intermediate_size);
    if (p.dtype == core::DType::kBf16) {
      ws_.inter_bf16.reserve(inter);
    } else {
      ws_.inter_f32.reserve(inter);
    }
    ws_.pair_out.reserve(pairs * static_cast<size_t>(p.hidden_size));
    ws_.partials.reserve(partials);
  }

  kernels::FastPaths const fast_paths_;
  std::mutex mu_;
  kernels::cpu::CpuMoeWorkspace ws_;
  size_t bytes_ = 0;
};

}  // namespace

core::Result<std::unique_ptr<DeviceOps>> make_device_ops(std::string const& backend_name,
                                                         core::Backend const& backend,
                                                         kernels::FastPaths const& fast_paths) {
  if (backend_name == "cpu") {
    return std::unique_ptr<DeviceOps>(std::make_unique<CpuDeviceOps>(fast_paths));
  }
#if defined(MOETUNE_HAVE_CUDA)
  if (backend_name == "cuda") return make_cuda_device_ops(backend, fast_paths);
#else
  (void)backend;
#endif
  return core::make_error(core::ErrorCode::kUnsupported, "runtime",
                          "backend '" + backend_name + "' has no runtime in this build; use cpu" +
                              " or rebuild with nvcc for cuda");
}

}  // namespace moetune::runtime
