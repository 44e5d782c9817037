// The decode regime's launches (tiny M: two kernels that route and combine themselves, or lever
// decode_fused's one cooperative kernel) and the traced fused launch of the phase test.
#include <cuda.h>

#include <atomic>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/sm90_decode_geometry.hpp"
#include "kernels/cuda/sm90_gather_launch.hpp"
#include "kernels/cuda/sm90_layer_parts.hpp"

namespace moetune::kernels::cuda {
namespace {

// Host mirrors of the device parameter structs; field order and types must match exactly.
constexpr int kFusedStamps = 8;  // sm90_decode_fused_kernel.cuh
struct DecodeParams {            // sm90_decode_kernel.cuh
  const void* a;
  const void* b;
  void* out;
  const int32_t* topk_ids;
  const float* topk_weights;
  int k_dim, n_dim, b_rows_per_expert, top_k, num_pairs, num_experts;
  int prefetch_bytes;
  int stage_w2;
  const void* bias;
};
struct DecodeFusedParams {  // sm90_decode_fused_kernel.cuh
  const void* x;
  const void* w1;
  const void* w2;
  void* h;
  void* out;
  const int32_t* topk_ids;
  const float* topk_weights;
  int32_t* barrier;
  int hidden, inter, top_k, num_tokens, num_experts;
  int smem_bytes;
  int64_t* trace;
};

}  // namespace

namespace parts {

/// Lever decode_fused: the whole decode layer in one cooperative launch, one CTA per SM.
core::Status launch_decode_fused(Sm90GatherKernels const& k, core::MoeProblem const& p,
                                 MoeArgs const& args, LayerBuffers const& b, cudaStream_t stream,
                                 FastPaths const& fast_paths, int64_t* trace) {
  DecodeFusedParams fp{args.x,
                       args.w1,
                       args.w2,
                       b.h,
                       args.out,
                       args.topk_ids,
                       args.topk_weights,
                       b.barrier,
                       static_cast<int>(p.hidden_size),
                       static_cast<int>(p.intermediate_size),
                       static_cast<int>(p.top_k),
                       static_cast<int>(p.num_tokens),
                       static_cast<int>(p.num_experts),
                       k.fused_smem,
                       trace};
  void* params[] = {&fp};
  auto run = [&](bool pdl) {
    return launch(k.fused, dim3(static_cast<unsigned>(k.sm_count)), dim3(kDecodeFusedThreads),
                  params, static_cast<size_t>(k.fused_smem), stream, pdl, 1, true);
  };
  // A driver that refuses PDL beside a cooperative launch gets it without PDL from then on (PDL
  // only overlaps this launch with the kernel before it).
  static std::atomic<bool> pdl_refused{false};
  const bool pdl = fast_paths.pdl && !pdl_refused.load();
  cudaError_t rc = run(pdl);
  if (pdl && (rc == cudaErrorInvalidValue || rc == cudaErrorNotSupported)) {
    cudaGetLastError();
    pdl_refused = true;
    rc = run(false);
  }
  MOETUNE_CUDA_CHECK(rc);
  return core::Status::Ok();
}

/// Tiny M: two launches, GEMM1 routes itself (from topk_ids), GEMM2 combines itself; or (lever
/// decode_fused, both GEMMs, where decode_fused_takes) one.
core::Status launch_decode(Sm90GatherKernels const& k, core::MoeProblem const& p,
                           MoeArgs const& args, LayerBuffers const& b, cudaStream_t stream,
                           unsigned stages, FastPaths const& fast_paths) {
  const int n1 = static_cast<int>(p.intermediate_size), kd = static_cast<int>(p.hidden_size);
  if (fast_paths.decode_fused && k.fused != nullptr && !p.has_bias && (stages & kStageGemm1) &&
      (stages & kStageGemm2) && decode_fused_takes(p, k.g1, k.sm_count, k.fused_smem)) {
    return launch_decode_fused(k, p, args, b, stream, fast_paths);
  }
  if (stages & kStageGemm1) {
    DecodeParams dp{args.x,
                    args.w1,
                    b.h,
                    args.topk_ids,
                    args.topk_weights,
                    kd,
                    n1,
                    static_cast<int>(core::gemm1_n(p)),
                    static_cast<int>(p.top_k),
                    b.pairs,
                    static_cast<int>(p.num_experts),
                    0,
                    0,
                    args.b1};
    void* params[] = {&dp};
    const dim3 grid(static_cast<unsigned>(b.pairs),
                    static_cast<unsigned>((n1 + k.g1.block_n - 1) / k.g1.block_n));
    MOETUNE_CUDA_CHECK(
        launch(k.gemm1, grid, dim3(k.g1.threads()), params, 0, stream, fast_paths.pdl));
  }
  if (stages & kStageGemm2) {
    // Both levers read topk_ids before the grid dependency wait: only right after this layer's
    // GEMM1, which waited for topk_ids' writer.
    const bool after_gemm1 = (stages & kStageGemm1) != 0;
    const bool stage_w2 = fast_paths.decode_w2_stage && after_gemm1 && k.g2.decode_stage_bytes > 0;
    DecodeParams dp{b.h,
                    args.w2,
                    args.out,
                    args.topk_ids,
                    args.topk_weights,
                    n1,
                    kd,
                    kd,
                    static_cast<int>(p.top_k),
                    b.pairs,
                    static_cast<int>(p.num_experts),
                    fast_paths.decode_l2_prefetch && after_gemm1
                        ? sm90_decode_prefetch_bytes(p, k.l2_bytes)
                        : 0,
                    stage_w2 ? 1 : 0,
                    args.b2};
    void* params[] = {&dp};
    const dim3 grid(static_cast<unsigned>(p.num_tokens),
                    static_cast<unsigned>((kd + k.g2.block_n - 1) / k.g2.block_n));
    const int smem = stage_w2 ? k.g2.decode_staged_smem() : k.g2.smem_bytes();
    MOETUNE_CUDA_CHECK(launch(k.gemm2, grid, dim3(k.g2.threads()), params,
                              static_cast<size_t>(smem), stream, fast_paths.pdl));
  }
  return core::Status::Ok();
}

}  // namespace parts

using namespace parts;

// A third of L2 for GEMM2's early rows leaves the rest to GEMM1's stream, which runs meanwhile.
int sm90_decode_prefetch_bytes(core::MoeProblem const& p, int l2_bytes) {
  if (l2_bytes <= 0) return 0;
  const int64_t rows = core::num_pairs(p) * p.hidden_size;
  const int64_t row_bytes = 2 * p.intermediate_size;
  const int64_t per_row = std::min(row_bytes, int64_t(l2_bytes) / 3 / std::max<int64_t>(rows, 1));
  return static_cast<int>(per_row / 128 * 128);
}

size_t sm90_decode_fused_trace_words(Sm90GatherKernels const& k) {
  return static_cast<size_t>(k.sm_count) * (kFusedStamps + kDecodeFusedThreads / 32);
}

core::Status launch_sm90_decode_fused_traced(Sm90GatherKernels const& k, core::MoeProblem const& p,
                                             MoeArgs const& args, void* workspace,
                                             size_t workspace_bytes, cudaStream_t stream,
                                             int64_t* trace) {
  if (k.fused == nullptr || !decode_fused_takes(p, k.g1, k.sm_count, k.fused_smem)) {
    return core::make_error(core::ErrorCode::kInvalidArgument, "launch_sm90_decode_fused_traced",
                            "the fused decode kernel does not take " + core::to_string(p) +
                                " with these kernels (loaded without lever decode_fused, or "
                                "decode_fused_takes is false); use a decode config that fits");
  }
  const int align_m = align_block_m(k.g1, k.g2);
  const WorkspaceLayout w = layout_for(p, align_m, align_m / k.g1.block_m, k.g2.split_k, false);
  MOETUNE_RETURN_IF_ERROR(check_workspace(w, workspace_bytes, "launch_sm90_decode_fused_traced"));
  const LayerBuffers b = carve(w, workspace, p, align_m, align_m / k.g1.block_m);
  return launch_decode_fused(k, p, args, b, stream, FastPaths{.decode_fused = true}, trace);
}

}  // namespace moetune::kernels::cuda
