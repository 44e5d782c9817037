// CudaFp8Layer (cuda_testbed_fp8.hpp): the fp8 testbed's draws and reference launches.
#include "kernels/cuda/cuda_testbed_fp8.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/jit.hpp"

namespace moetune::kernels::cuda {
namespace {

/// Host mirror of moetune_dev::RefFp8Params (sm90_fp8_reference_kernel.cuh).
struct RefFp8Params {
  RefParams r;
  const float* w1_scale;
  const float* w2_scale;
  const float* a1_scale;
  const float* a2_scale;
  float* xd;
  int block;
};

constexpr float kE4m3Max = 448.0f;
constexpr float kDrawnMagnitude = 64.0f;  // e4m3 weights are drawn as e4m3(64 N(0,1))

core::Status reserve(float*& buf, size_t& cap, long long n) {
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  if (buf != nullptr && bytes <= cap) return core::Status::Ok();
  if (buf != nullptr) MOETUNE_CUDA_CHECK(cudaFree(buf));
  buf = nullptr;
  cap = 0;
  MOETUNE_CUDA_CHECK(cudaMalloc(&buf, std::max<size_t>(bytes, 256)));
  cap = bytes;
  return core::Status::Ok();
}

core::Status fill_launch(cudaKernel_t k, void** params, cudaStream_t stream) {
  MOETUNE_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(k), dim3(132 * 8), dim3(256),
                                      params, 0, stream));
  return core::Status::Ok();
}

}  // namespace

CudaFp8Layer::~CudaFp8Layer() {
  for (float* p : {w1_scale_, w2_scale_, a_scale_}) {
    if (p != nullptr) cudaFree(p);
  }
}

core::Status CudaFp8Layer::load() {
  if (loaded_) return core::Status::Ok();
  const std::vector<std::string> names = {
      "&moetune_dev::moe_fill_fp8_e4m3_kernel", "&moetune_dev::moe_fill_fp8_scale_kernel",
      "&moetune_dev::moe_ref_fp8_quant_kernel", "&moetune_dev::moe_ref_fp8_gemm1_kernel",
      "&moetune_dev::moe_ref_fp8_gemm2_kernel"};
  auto mod = compile_module(names);
  if (!mod.ok()) return mod.error();
  cudaLibrary_t lib;
  MOETUNE_CUDA_CHECK(
      cudaLibraryLoadData(&lib, mod->cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  cudaKernel_t* slots[] = {&fill_e4m3_, &fill_scale_, &quant_, &gemm1_, &gemm2_};
  for (size_t i = 0; i < names.size(); ++i) {
    MOETUNE_CUDA_CHECK(cudaLibraryGetKernel(slots[i], lib, mod->lowered[names[i]].c_str()));
  }
  MOETUNE_CUDA_CHECK(cudaMalloc(&a_scale_, 2 * sizeof(float)));
  loaded_ = true;
  return core::Status::Ok();
}

core::Status CudaFp8Layer::draw(core::MoeProblem const& p, void* w1, void* w2, uint64_t seed,
                                cudaStream_t stream) {
  MOETUNE_RETURN_IF_ERROR(load());
  const bool block = p.quant == core::Quant::kFp8Block;
  const long long E = p.num_experts, K = p.hidden_size, I = p.intermediate_size;
  const long long N1 = core::gemm1_n(p);
  long long n1s = block ? E * (N1 / 128) * (K / 128) : E;
  long long n2s = block ? E * (K / 128) * (I / 128) : E;
  MOETUNE_RETURN_IF_ERROR(reserve(w1_scale_, w1s_cap_, n1s));
  MOETUNE_RETURN_IF_ERROR(reserve(w2_scale_, w2s_cap_, n2s));
  long long n1 = E * N1 * K, n2 = E * K * I;
  unsigned long long s1 = seed * 5 + 1, s2 = seed * 5 + 2, s3 = seed * 5 + 3, s4 = seed * 5 + 4;
  void* e1[] = {&w1, &n1, &s1};
  void* e2[] = {&w2, &n2, &s2};
  MOETUNE_RETURN_IF_ERROR(fill_launch(fill_e4m3_, e1, stream));
  MOETUNE_RETURN_IF_ERROR(fill_launch(fill_e4m3_, e2, stream));
  // Dequantised weights ~ N(0, 1 / depth) times the drawn 10^u, as the bf16 testbed's.
  float base1 = 1.0f / (kDrawnMagnitude * std::sqrt(float(K)));
  float base2 = 1.0f / (kDrawnMagnitude * std::sqrt(float(I)));
  float spread = block ? 2.0f : 0.5f;
  void* f1[] = {&w1_scale_, &n1s, &s3, &base1, &spread};
  void* f2[] = {&w2_scale_, &n2s, &s4, &base2, &spread};
  MOETUNE_RETURN_IF_ERROR(fill_launch(fill_scale_, f1, stream));
  MOETUNE_RETURN_IF_ERROR(fill_launch(fill_scale_, f2, stream));
  const float a[2] = {8.0f / kE4m3Max, 16.0f / kE4m3Max};  // x ~ N(0, 1); h ~ 1
  MOETUNE_CUDA_CHECK(cudaMemcpyAsync(a_scale_, a, sizeof(a), cudaMemcpyHostToDevice, stream));
  MOETUNE_CUDA_CHECK(cudaStreamSynchronize(stream));  // `a` lives on this frame
  return core::Status::Ok();
}

core::Status CudaFp8Layer::reference(core::MoeProblem const& p, RefParams const& rp,
                                     cudaStream_t stream) {
  MOETUNE_RETURN_IF_ERROR(load());
  const long long S = rp.num_sample, K = p.hidden_size, I = p.intermediate_size;
  const bool block = p.quant == core::Quant::kFp8Block;
  float* xd = nullptr;
  MOETUNE_CUDA_CHECK(cudaMalloc(&xd, std::max<size_t>(sizeof(float) * S * K, 256)));
  RefFp8Params fp{
      rp, w1_scale_,    w2_scale_, block ? nullptr : a_scale_, block ? nullptr : a_scale_ + 1,
      xd, block ? 1 : 0};
  int h_mode = 0;
  float* dst = xd;
  void* quant_params[] = {&fp, &h_mode, &dst};
  void* gemm_params[] = {&fp};
  core::Status st = launch_ref_warps(quant_, S * (K / 128), quant_params, stream);
  if (st.ok()) st = launch_ref_warps(gemm1_, S * p.top_k * I, gemm_params, stream);
  h_mode = 1;  // launch arguments are copied at the launch: the first one keeps h_mode 0
  dst = rp.h;  // h quantised in place: each warp reads its 128 values before writing them
  if (st.ok()) st = launch_ref_warps(quant_, S * p.top_k * (I / 128), quant_params, stream);
  if (st.ok()) st = launch_ref_warps(gemm2_, S * K, gemm_params, stream);
  const cudaError_t sync = cudaStreamSynchronize(stream);
  cudaFree(xd);
  MOETUNE_RETURN_IF_ERROR(st);
  MOETUNE_CUDA_CHECK(sync);
  return core::Status::Ok();
}

void CudaFp8Layer::set_scales(core::MoeProblem const& p, MoeArgs& args) const {
  args.w1_scale = w1_scale_;
  args.w2_scale = w2_scale_;
  if (p.quant == core::Quant::kFp8Tensor) {
    args.a1_scale = a_scale_;
    args.a2_scale = a_scale_ + 1;
  }
}

}  // namespace moetune::kernels::cuda
