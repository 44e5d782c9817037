// The device half of run_checked (checked_run.hpp): device buffers, one stream, copies. Compiled
// only with MOETUNE_HAVE_CUDA.
#if defined(MOETUNE_HAVE_CUDA)

#include <cuda_runtime.h>

#include <vector>

#include "kernels/cpu/fp8_layer.hpp"
#include "kernels/cpu/moe_data.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "moetune/moe_runner.hpp"

namespace moetune::runtime {
namespace {

/// Device buffers and a stream, released on every path out.
struct DeviceCall {
  std::vector<void*> buffers;
  cudaStream_t stream = nullptr;
  ~DeviceCall() {
    if (stream != nullptr) cudaStreamDestroy(stream);
    for (void* b : buffers) cudaFree(b);
  }
  core::Result<void*> upload(void const* src, size_t bytes) {
    void* dst = nullptr;
    MOETUNE_CUDA_CHECK(cudaMalloc(&dst, bytes == 0 ? 1 : bytes));
    buffers.push_back(dst);
    if (bytes > 0) MOETUNE_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    return dst;
  }
};

/// The fp8 layer's scales on the device (null pointers for a bf16 run).
struct DeviceScales {
  float const* w1 = nullptr;
  float const* w2 = nullptr;
  float const* a1 = nullptr;
  float const* a2 = nullptr;
};

core::Result<DeviceScales> upload_scales(DeviceCall& call, kernels::cpu::Fp8HostLayer const* fp8,
                                         core::MoeProblem const& p) {
  if (fp8 == nullptr) return DeviceScales{};
  auto up = [&](std::vector<float> const& v) { return call.upload(v.data(), v.size() * 4); };
  auto w1 = up(fp8->w1_scale);
  auto w2 = up(fp8->w2_scale);
  auto a1 = call.upload(&fp8->a1_scale, sizeof(float));
  auto a2 = call.upload(&fp8->a2_scale, sizeof(float));
  for (auto const* r : {&w1, &w2, &a1, &a2}) {
    if (!r->ok()) return r->error();
  }
  const bool tensor = p.quant == core::Quant::kFp8Tensor;  // block: activations scaled in-layer
  return DeviceScales{.w1 = static_cast<float const*>(*w1),
                      .w2 = static_cast<float const*>(*w2),
                      .a1 = tensor ? static_cast<float const*>(*a1) : nullptr,
                      .a2 = tensor ? static_cast<float const*>(*a2) : nullptr};
}

}  // namespace

core::Status run_on_device(MoeRunner& runner, kernels::cpu::MoeHostData const& d,
                           kernels::cpu::Fp8HostLayer const* fp8, Knobs const& knobs,
                           std::vector<unsigned char>& out, Choice* chosen) {
  core::MoeProblem const& p = d.problem;
  size_t const eb = core::dtype_bytes(p.dtype);
  size_t const wb = fp8 != nullptr ? 1 : eb;  // e4m3 weights: one byte each
  size_t const pairs = d.routing.topk_ids.size();
  DeviceCall call;
  MOETUNE_CUDA_CHECK(cudaStreamCreateWithFlags(&call.stream, cudaStreamNonBlocking));
  auto x = call.upload(d.x_data(), static_cast<size_t>(p.num_tokens * p.hidden_size) * eb);
  auto ids = call.upload(d.routing.topk_ids.data(), pairs * sizeof(int32_t));
  auto wts = call.upload(d.routing.topk_weights.data(), pairs * sizeof(float));
  auto w1 = call.upload(fp8 != nullptr ? fp8->w1.data() : d.w1_data(),
                        static_cast<size_t>(p.num_experts * core::gemm1_n(p) * p.hidden_size) * wb);
  auto w2 =
      call.upload(fp8 != nullptr ? fp8->w2.data() : d.w2_data(),
                  static_cast<size_t>(p.num_experts * p.hidden_size * p.intermediate_size) * wb);
  auto o = call.upload(out.data(), out.size());  // the poisoned output
  size_t const biases = p.has_bias ? 1 : 0;      // empty uploads otherwise, passed as null
  auto b1 = call.upload(d.b1_data(), biases * p.num_experts * core::gemm1_n(p) * eb);
  auto b2 = call.upload(d.b2_data(), biases * p.num_experts * p.hidden_size * eb);
  for (auto const* r : {&x, &ids, &wts, &w1, &w2, &o, &b1, &b2}) {
    if (!r->ok()) return r->error();
  }
  auto scales = upload_scales(call, fp8, p);
  if (!scales.ok()) return scales.error();
  MOETUNE_RETURN_IF_ERROR(runner.run(RunArgs{.stream = call.stream,
                                             .x = *x,
                                             .topk_ids = static_cast<int32_t const*>(*ids),
                                             .topk_weights = static_cast<float const*>(*wts),
                                             .w1 = *w1,
                                             .w2 = *w2,
                                             .out = *o,
                                             .m = p.num_tokens,
                                             .b1 = p.has_bias ? *b1 : nullptr,
                                             .b2 = p.has_bias ? *b2 : nullptr,
                                             .w1_scale = scales->w1,
                                             .w2_scale = scales->w2,
                                             .a1_scale = scales->a1,
                                             .a2_scale = scales->a2},
                                     knobs, chosen));
  MOETUNE_CUDA_CHECK(cudaStreamSynchronize(call.stream));
  MOETUNE_CUDA_CHECK(cudaGetLastError());
  if (!out.empty()) {
    MOETUNE_CUDA_CHECK(cudaMemcpy(out.data(), *o, out.size(), cudaMemcpyDeviceToHost));
  }
  return core::Status::Ok();
}

}  // namespace moetune::runtime

#endif  // MOETUNE_HAVE_CUDA
