// CudaTestbed: the cuda backend's testbed (cuda_testbed.hpp): device buffers of one prepared
// problem with fresh random data, the fp32 GPU reference on sampled tokens, checks with poisoned
// outputs and workspace, and graph-replay timing with the L2 flushed. (Just past the 400-line rule
// of thumb: the buffers, the reference and the timing share one object's state; see the header.)
#include "kernels/cuda/cuda_testbed.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_reference.hpp"
#include "kernels/cuda/cuda_testbed_fp8.hpp"
#include "kernels/cuda/jit.hpp"
#include "kernels/cuda_factory.hpp"

namespace moetune::kernels::cuda {
namespace {

constexpr size_t kFlushBytes = size_t{256} << 20;  // > 4x the H200's 60 MB L2
constexpr int64_t kFullCheckTokens = 256;          // check every token up to this M
constexpr int64_t kSampleTokens = 192;             // else this many, evenly spaced

uint64_t fnv1a_bytes(const void* data, size_t n) {
  auto const* p = static_cast<const unsigned char*>(data);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);  // round to nearest even
}

float bf16_to_float(uint16_t v) {
  uint32_t u = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

core::Status grow(void*& buf, size_t& cap, size_t bytes) {
  if (bytes <= cap && buf) return core::Status::Ok();
  if (buf) MOETUNE_CUDA_CHECK(cudaFree(buf));
  buf = nullptr;
  cap = 0;
  cudaError_t rc = cudaMalloc(&buf, std::max<size_t>(bytes, 256));
  if (rc == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return core::make_error(core::ErrorCode::kInvalidArgument, "cuda testbed",
                            "out of device memory allocating " + std::to_string(bytes) + " bytes");
  }
  MOETUNE_CUDA_CHECK(rc);
  cap = bytes;
  return core::Status::Ok();
}

}  // namespace

core::Result<std::unique_ptr<CudaTestbed>> CudaTestbed::create() {
  auto dev = query_cuda_device();
  if (!dev.ok()) return dev.error();
  MOETUNE_CUDA_CHECK(cudaSetDevice(0));
  MOETUNE_CUDA_CHECK(cudaFree(nullptr));  // create the primary context for the driver API
  std::unique_ptr<CudaTestbed> tb(new CudaTestbed());
  tb->backend_ = std::make_unique<CudaBackend>(*dev);
  MOETUNE_CUDA_CHECK(cudaStreamCreateWithFlags(&tb->stream_, cudaStreamNonBlocking));
  auto mod =
      compile_module({"&moetune_dev::moe_ref_gemm1_kernel", "&moetune_dev::moe_ref_gemm2_kernel",
                      "&moetune_dev::moe_l2_flush_kernel", "&moetune_dev::moe_fill_normal_kernel"});
  if (!mod.ok()) return mod.error();
  cudaLibrary_t m;
  MOETUNE_CUDA_CHECK(
      cudaLibraryLoadData(&m, mod->cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  MOETUNE_CUDA_CHECK(cudaLibraryGetKernel(
      &tb->ref1_, m, mod->lowered["&moetune_dev::moe_ref_gemm1_kernel"].c_str()));
  MOETUNE_CUDA_CHECK(cudaLibraryGetKernel(
      &tb->ref2_, m, mod->lowered["&moetune_dev::moe_ref_gemm2_kernel"].c_str()));
  MOETUNE_CUDA_CHECK(cudaLibraryGetKernel(
      &tb->flush_, m, mod->lowered["&moetune_dev::moe_l2_flush_kernel"].c_str()));
  MOETUNE_CUDA_CHECK(cudaLibraryGetKernel(
      &tb->fill_, m, mod->lowered["&moetune_dev::moe_fill_normal_kernel"].c_str()));
  MOETUNE_CUDA_CHECK(cudaMalloc(&tb->flush_buf_, kFlushBytes));
  MOETUNE_CUDA_CHECK(cudaMemset(tb->flush_buf_, 1, kFlushBytes));
  MOETUNE_CUDA_CHECK(cudaMalloc(&tb->sink_, 4096));
  return tb;
}

CudaTestbed::~CudaTestbed() {
  for (void* p : {x_, w1_, w2_, ids_, weights_, out_, ws_, flush_buf_, sink_}) {
    if (p) cudaFree(p);
  }
  if (stream_) cudaStreamDestroy(stream_);
}

core::Backend const& CudaTestbed::backend() const { return *backend_; }

void CudaTestbed::set_fast_paths(FastPaths const& fp) {
  fast_paths_ = fp;
  backend_->set_fast_paths(fp);
}

core::Status CudaTestbed::fill_normal(void* buf, int64_t n, uint64_t seed, float scale) {
  if (n == 0) return core::Status::Ok();
  long long nn = n;
  unsigned long long ss = seed;
  void* params[] = {&buf, &nn, &ss, &scale};
  MOETUNE_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(fill_), dim3(132 * 8),
                                      dim3(256), params, 0, stream_));
  return core::Status::Ok();
}

core::Status CudaTestbed::draw_weights(core::MoeProblem const& p, uint64_t seed) {
  const int64_t K = p.hidden_size, I = p.intermediate_size;
  const int64_t E = p.num_experts, N1 = core::gemm1_n(p);
  const bool fp8 = p.quant != core::Quant::kNone;
  const int64_t eb = fp8 ? 1 : 2;  // e4m3 or bf16 weights
  MOETUNE_RETURN_IF_ERROR(grow(w1_, w1_cap_, eb * E * N1 * K));
  MOETUNE_RETURN_IF_ERROR(grow(w2_, w2_cap_, eb * E * K * I));
  if (fp8) {
    if (!fp8_) fp8_ = std::make_unique<CudaFp8Layer>();
    MOETUNE_RETURN_IF_ERROR(fp8_->draw(p, w1_, w2_, seed, stream_));
  } else {
    MOETUNE_RETURN_IF_ERROR(fill_normal(w1_, E * N1 * K, seed * 3 + 1, 1.0f / std::sqrt(float(K))));
    MOETUNE_RETURN_IF_ERROR(fill_normal(w2_, E * K * I, seed * 3 + 2, 1.0f / std::sqrt(float(I))));
  }
  w_seed_ = seed;
  return core::Status::Ok();
}

core::Status CudaTestbed::prepare(core::MoeProblem const& problem,
                                  core::RoutingProfile const& routing, uint64_t seed) {
  MOETUNE_RETURN_IF_ERROR(core::validate(problem));
  if (problem.has_bias) {
    return core::make_error(core::ErrorCode::kUnsupported, "cuda testbed",
                            "problem.has_bias: the testbed generates no biases (tune and bench "
                            "the unbiased problem; its choice serves the biased layer)");
  }
  // The weights are kept only where they are the ones this seed draws (Testbed::prepare: every
  // input from `seed` alone). NOTE: kept for any seed of the same shape, a bench point's weights,
  // and its digest, would come from the first point of its M list.
  const bool same_weights = w1_ && w_seed_ == seed && problem_.num_experts == problem.num_experts &&
                            problem_.hidden_size == problem.hidden_size &&
                            problem_.intermediate_size == problem.intermediate_size &&
                            problem_.activation == problem.activation &&
                            problem_.quant == problem.quant;
  problem_ = problem;
  ref_valid_ = false;
  if (!same_weights) MOETUNE_RETURN_IF_ERROR(draw_weights(problem, seed));
  const int64_t M = problem.num_tokens, K = problem.hidden_size, E = problem.num_experts;
  MOETUNE_RETURN_IF_ERROR(grow(x_, x_cap_, 2 * M * K));
  MOETUNE_RETURN_IF_ERROR(grow(ids_, ids_cap_, 4 * M * problem.top_k));
  MOETUNE_RETURN_IF_ERROR(grow(weights_, wts_cap_, 4 * M * problem.top_k));
  MOETUNE_RETURN_IF_ERROR(grow(out_, out_cap_, 2 * M * K));
  MOETUNE_RETURN_IF_ERROR(fill_normal(x_, M * K, seed * 3 + 3, 1.0f));
  auto r = core::generate_routing(routing, M, E, problem.top_k);
  if (!r.ok()) return r.error();
  experts_hit_ = core::experts_hit(*r, E);
  if (M > 0) {
    MOETUNE_CUDA_CHECK(
        cudaMemcpy(ids_, r->topk_ids.data(), 4 * M * problem.top_k, cudaMemcpyHostToDevice));
    MOETUNE_CUDA_CHECK(cudaMemcpy(weights_, r->topk_weights.data(), 4 * M * problem.top_k,
                                  cudaMemcpyHostToDevice));
  }
  sample_tokens_.clear();
  if (M <= kFullCheckTokens) {
    for (int64_t t = 0; t < M; ++t) sample_tokens_.push_back(static_cast<int32_t>(t));
  } else {
    for (int64_t s = 0; s < kSampleTokens; ++s) {
      sample_tokens_.push_back(static_cast<int32_t>(s * (M - 1) / (kSampleTokens - 1)));
    }
  }
  MOETUNE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  return core::Status::Ok();
}

core::Status CudaTestbed::run_reference() {
  if (ref_valid_) return core::Status::Ok();
  const auto& p = problem_;
  const int S = static_cast<int>(sample_tokens_.size());
  ref_out_.assign(static_cast<size_t>(S) * p.hidden_size, 0.0f);
  if (S == 0) {
    ref_valid_ = true;
    return core::Status::Ok();
  }
  void *tokens = nullptr, *h = nullptr, *out = nullptr;
  MOETUNE_CUDA_CHECK(cudaMalloc(&tokens, 4 * S));
  MOETUNE_CUDA_CHECK(cudaMalloc(&h, 4 * size_t(S) * p.top_k * p.intermediate_size));
  MOETUNE_CUDA_CHECK(cudaMalloc(&out, 4 * size_t(S) * p.hidden_size));
  MOETUNE_CUDA_CHECK(cudaMemcpy(tokens, sample_tokens_.data(), 4 * S, cudaMemcpyHostToDevice));
  RefParams rp{x_,
               w1_,
               w2_,
               static_cast<const int32_t*>(ids_),
               static_cast<const float*>(weights_),
               static_cast<const int32_t*>(tokens),
               static_cast<float*>(h),
               static_cast<float*>(out),
               S,
               static_cast<int>(p.hidden_size),
               static_cast<int>(p.intermediate_size),
               static_cast<int>(p.top_k),
               act_id(p.activation),
               core::is_gated(p.activation) ? 1 : 0};
  core::Status st;
  if (p.quant != core::Quant::kNone) {
    st = fp8_->reference(p, rp, stream_);
  } else {
    void* params[] = {&rp};
    st = launch_ref_warps(ref1_, (long long)S * p.top_k * p.intermediate_size, params, stream_);
    if (st.ok()) st = launch_ref_warps(ref2_, (long long)S * p.hidden_size, params, stream_);
  }
  cudaError_t rc = cudaStreamSynchronize(stream_);
  if (st.ok() && rc == cudaSuccess) {
    rc = cudaMemcpy(ref_out_.data(), out, ref_out_.size() * 4, cudaMemcpyDeviceToHost);
  }
  cudaFree(tokens);
  cudaFree(h);
  cudaFree(out);
  MOETUNE_RETURN_IF_ERROR(st);
  MOETUNE_CUDA_CHECK(rc);
  ref_valid_ = true;
  return core::Status::Ok();
}

core::Result<CudaTestbed::HostInputs> CudaTestbed::download_inputs() const {
  const auto& p = problem_;
  if (p.quant != core::Quant::kNone) {
    return core::make_error(core::ErrorCode::kUnsupported, "cuda testbed download_inputs",
                            "problem.quant = " + std::string(core::to_string(p.quant)) +
                                ": host inputs are bf16 only (fp8 layers are checked against "
                                "the GPU reference)");
  }
  HostInputs h;
  auto grab = [](const void* dev, int64_t n, std::vector<float>& out) -> core::Status {
    std::vector<uint16_t> bits(n);
    if (n > 0) MOETUNE_CUDA_CHECK(cudaMemcpy(bits.data(), dev, 2 * n, cudaMemcpyDeviceToHost));
    out.resize(n);
    for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_float(bits[i]);
    return core::Status::Ok();
  };
  const int64_t pairs = p.num_tokens * p.top_k;
  MOETUNE_RETURN_IF_ERROR(grab(x_, p.num_tokens * p.hidden_size, h.x));
  MOETUNE_RETURN_IF_ERROR(grab(w1_, p.num_experts * core::gemm1_n(p) * p.hidden_size, h.w1));
  MOETUNE_RETURN_IF_ERROR(grab(w2_, p.num_experts * p.hidden_size * p.intermediate_size, h.w2));
  h.topk_ids.resize(pairs);
  h.topk_weights.resize(pairs);
  if (pairs > 0) {
    MOETUNE_CUDA_CHECK(cudaMemcpy(h.topk_ids.data(), ids_, 4 * pairs, cudaMemcpyDeviceToHost));
    MOETUNE_CUDA_CHECK(
        cudaMemcpy(h.topk_weights.data(), weights_, 4 * pairs, cudaMemcpyDeviceToHost));
  }
  return h;
}

MoeArgs CudaTestbed::launch_args() const {
  MoeArgs args{
      x_, static_cast<const int32_t*>(ids_), static_cast<const float*>(weights_), w1_, w2_, out_};
  if (problem_.quant != core::Quant::kNone) fp8_->set_scales(problem_, args);
  return args;
}

core::Status CudaTestbed::ensure_workspace(size_t bytes) {
  return grow(ws_, ws_bytes_, bytes);  // sm90_gather_workspace_bytes: never 0, even at M = 0
}

core::Result<std::shared_ptr<Sm90GatherKernels const>> CudaTestbed::kernels_for(
    core::MoeConfig const& c) {
  MOETUNE_RETURN_IF_ERROR(sm90_can_implement(problem_, c, fast_paths_));
  auto k = load_sm90_gather(problem_, c);
  if (k.ok()) last_ptxas_ = (*k)->ptxas_log;
  return k;
}

core::Status CudaTestbed::compile(core::MoeConfig const& config) {
  auto k = kernels_for(config);
  return k.ok() ? core::Status::Ok() : core::Status(k.error());
}

std::vector<core::Status> CudaTestbed::precompile(std::vector<core::MoeConfig> const& configs) {
  return precompile_sm90_gather(problem_, configs, fast_paths_);
}

core::Result<CheckResult> CudaTestbed::check(core::MoeConfig const& config) {
  auto k = kernels_for(config);
  if (!k.ok()) return k.error();
  const auto& p = problem_;
  const size_t ws_need = sm90_gather_workspace_bytes(**k, p);
  MOETUNE_RETURN_IF_ERROR(ensure_workspace(ws_need));
  const size_t n_out = static_cast<size_t>(p.num_tokens) * p.hidden_size;
  if (n_out > 0) {
    MOETUNE_CUDA_CHECK(cudaMemsetAsync(out_, 0xFF, 2 * n_out, stream_));
  }
  // The workspace poisoned too: a launch must write every list, count and row it reads, not
  // find them from an earlier run of this or another config.
  MOETUNE_CUDA_CHECK(cudaMemsetAsync(ws_, 0xFF, ws_need, stream_));
  MoeArgs const args = launch_args();
  MOETUNE_RETURN_IF_ERROR(
      launch_sm90_gather(**k, p, args, ws_, ws_bytes_, stream_, kStageAll, fast_paths_));
  MOETUNE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  OutputFault const fault = std::exchange(output_fault_, OutputFault::kNone);
  if (fault != OutputFault::kNone && n_out > 0) {
    // Test-only (--inject-fault wrong / nan): corrupt the real device output, so the check below
    // is what must catch it. Element 0 belongs to token 0, which the reference always samples.
    const uint16_t bits =
        fault == OutputFault::kNan ? uint16_t{0x7FC0} : float_to_bf16(kWrongOutputValue);
    MOETUNE_CUDA_CHECK(cudaMemcpy(out_, &bits, sizeof(bits), cudaMemcpyHostToDevice));
  }
  MOETUNE_RETURN_IF_ERROR(run_reference());
  std::vector<uint16_t> out(n_out);
  if (n_out > 0)
    MOETUNE_CUDA_CHECK(cudaMemcpy(out.data(), out_, n_out * 2, cudaMemcpyDeviceToHost));
  CheckResult r;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(fnv1a_bytes(out.data(), out.size() * 2)));
  r.digest = buf;
  for (size_t i = 0; i < n_out; ++i) {
    if (out[i] == 0xFFFF) {
      r.all_written = false;
      if (r.first_bad < 0) r.first_bad = static_cast<int64_t>(i);
    }
    if (!std::isfinite(bf16_to_float(out[i]))) {
      r.all_finite = false;
      if (r.first_bad < 0) r.first_bad = static_cast<int64_t>(i);
    }
  }
  double num = 0, den = 0;
  for (size_t s = 0; s < sample_tokens_.size(); ++s) {
    for (int64_t c = 0; c < p.hidden_size; ++c) {
      const double ref = ref_out_[s * p.hidden_size + c];
      const double got =
          bf16_to_float(out[static_cast<size_t>(sample_tokens_[s]) * p.hidden_size + c]);
      num += (got - ref) * (got - ref);
      den += ref * ref;
    }
  }
  r.rel_l2_error = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  if (!std::isfinite(r.rel_l2_error)) r.rel_l2_error = INFINITY;
  last_out_ = std::move(out);
  return r;
}

core::Result<TimingResult> CudaTestbed::time_stages(core::MoeConfig const& config, unsigned stages,
                                                    int warmup, int reps) {
  auto k = kernels_for(config);
  if (!k.ok()) return k.error();
  const auto& p = problem_;
  MOETUNE_RETURN_IF_ERROR(ensure_workspace(sm90_gather_workspace_bytes(**k, p)));
  MoeArgs const args = launch_args();
  TimingResult tr;
  if (p.num_tokens == 0) {
    tr.samples_us.assign(std::max(reps, 1), 0.0);
    return tr;
  }
  // One full run fills the workspace that a partial stage set reads.
  MOETUNE_RETURN_IF_ERROR(
      launch_sm90_gather(**k, p, args, ws_, ws_bytes_, stream_, kStageAll, fast_paths_));
  cudaStream_t cs = stream_;
  MOETUNE_CUDA_CHECK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeThreadLocal));
  core::Status st = launch_sm90_gather(**k, p, args, ws_, ws_bytes_, stream_, stages, fast_paths_);
  cudaGraph_t graph = nullptr;
  cudaError_t end_rc = cudaStreamEndCapture(cs, &graph);
  MOETUNE_RETURN_IF_ERROR(st);
  MOETUNE_CUDA_CHECK(end_rc);
  size_t nodes = 0;
  MOETUNE_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  if (nodes == 0) {  // a stage set that launches nothing for this config
    cudaGraphDestroy(graph);
    tr.samples_us.assign(std::max(reps, 1), 0.0);
    return tr;
  }
  cudaGraphExec_t exec = nullptr;
  MOETUNE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t e0, e1;
  MOETUNE_CUDA_CHECK(cudaEventCreate(&e0));
  MOETUNE_CUDA_CHECK(cudaEventCreate(&e1));
  long long n_vec = static_cast<long long>(kFlushBytes / 16);
  void* fparams[] = {&flush_buf_, &n_vec, &sink_};
  for (int i = 0; i < warmup + reps; ++i) {
    MOETUNE_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(flush_), dim3(132 * 4),
                                        dim3(256), fparams, 0, stream_));
    MOETUNE_CUDA_CHECK(cudaEventRecord(e0, cs));
    MOETUNE_CUDA_CHECK(cudaGraphLaunch(exec, cs));
    MOETUNE_CUDA_CHECK(cudaEventRecord(e1, cs));
    MOETUNE_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    MOETUNE_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    if (i >= warmup) tr.samples_us.push_back(1000.0 * ms);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  MOETUNE_CUDA_CHECK(cudaGetLastError());
  tr.median_us = median_us(tr.samples_us);
  return tr;
}

core::Result<TimingResult> CudaTestbed::time(core::MoeConfig const& config, int warmup, int reps) {
  return time_stages(config, kStageAll, warmup, reps);
}

}  // namespace moetune::kernels::cuda

namespace moetune::kernels {

bool cuda_device_present() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return count > 0;
}

core::Result<std::unique_ptr<core::Backend>> make_cuda_backend() {
  // The backend is config logic (can_implement, defaults, search space) and needs no GPU, so CI and
  // dev machines can resolve and lint sm90 tables; running kernels goes through the testbed,
  // which does need one.
  auto dev = cuda::query_cuda_device();
  core::DeviceInfo info;
  if (dev.ok()) {
    info = *dev;
  } else {
    info.name = "none (no CUDA device visible)";
    info.arch = "sm_90a";
    info.toolchain = "nvrtc " + cuda::nvrtc_version();
  }
  return std::unique_ptr<core::Backend>(std::make_unique<cuda::CudaBackend>(info));
}

core::Result<std::unique_ptr<Testbed>> make_cuda_testbed() {
  auto tb = cuda::CudaTestbed::create();
  if (!tb.ok()) return tb.error();
  return std::unique_ptr<Testbed>(std::move(tb).value());
}

}  // namespace moetune::kernels
