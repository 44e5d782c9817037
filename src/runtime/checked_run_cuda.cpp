// The device half of run_checked (checked_run.hpp): device buffers, one stream, copies. Compiled
// only with MOETUNE_HAVE_CUDA.
#if defined(MOETUNE_HAVE_CUDA)

#include <cuda_runtime.h>

#include <vector>

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

}  // namespace

core::Status run_on_device(MoeRunner& runner, kernels::cpu::MoeHostData const& d,
                           Knobs const& knobs, std::vector<unsigned char>& out, Choice* chosen) {
  core::MoeProblem const& p = d.problem;
  size_t const eb = core::dtype_bytes(p.dtype);
  size_t const pairs = d.routing.topk_ids.size();
  DeviceCall call;
  MOETUNE_CUDA_CHECK(cudaStreamCreateWithFlags(&call.stream, cudaStreamNonBlocking));
  auto x = call.upload(d.x_data(), static_cast<size_t>(p.num_tokens * p.hidden_size) * eb);
  auto ids = call.upload(d.routing.topk_ids.data(), pairs * sizeof(int32_t));
  auto wts = call.upload(d.routing.topk_weights.data(), pairs * sizeof(float));
  auto w1 = call.upload(d.w1_data(),
                        static_cast<size_t>(p.num_experts * core::gemm1_n(p) * p.hidden_size) * eb);
  auto w2 = call.upload(
      d.w2_data(), static_cast<size_t>(p.num_experts * p.hidden_size * p.intermediate_size) * eb);
  auto o = call.upload(out.data(), out.size());  // the poisoned output
  size_t const biases = p.has_bias ? 1 : 0;      // empty uploads otherwise, passed as null
  auto b1 = call.upload(d.b1_data(), biases * p.num_experts * core::gemm1_n(p) * eb);
  auto b2 = call.upload(d.b2_data(), biases * p.num_experts * p.hidden_size * eb);
  for (auto const* r : {&x, &ids, &wts, &w1, &w2, &o, &b1, &b2}) {
    if (!r->ok()) return r->error();
  }
  MOETUNE_RETURN_IF_ERROR(runner.run(RunArgs{.stream = call.stream,
                                             .x = *x,
                                             .topk_ids = static_cast<int32_t const*>(*ids),
                                             .topk_weights = static_cast<float const*>(*wts),
                                             .w1 = *w1,
                                             .w2 = *w2,
                                             .out = *o,
                                             .m = p.num_tokens,
                                             .b1 = p.has_bias ? *b1 : nullptr,
                                             .b2 = p.has_bias ? *b2 : nullptr},
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
