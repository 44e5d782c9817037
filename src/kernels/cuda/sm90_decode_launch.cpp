// The decode regime's launches (tiny M: two kernels that route and combine themselves).
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/sm90_gather_launch.hpp"
#include "kernels/cuda/sm90_layer_parts.hpp"

namespace moetune::kernels::cuda {
namespace parts {

/// Tiny M: two launches, GEMM1 routes itself (from topk_ids), GEMM2 combines itself.
core::Status launch_decode(Sm90GatherKernels const& k, core::MoeProblem const& p,
                           MoeArgs const& args, LayerBuffers const& b, cudaStream_t stream,
                           unsigned stages, FastPaths const& fast_paths) {
  const int n1 = static_cast<int>(p.intermediate_size), kd = static_cast<int>(p.hidden_size);
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
                    args.b1};
    void* params[] = {&dp};
    const dim3 grid(static_cast<unsigned>(b.pairs),
                    static_cast<unsigned>((n1 + k.g1.block_n - 1) / k.g1.block_n));
    MOETUNE_CUDA_CHECK(
        launch(k.gemm1, grid, dim3(k.g1.threads()), params, 0, stream, fast_paths.pdl));
  }
  if (stages & kStageGemm2) {
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
                    args.b2};
    void* params[] = {&dp};
    const dim3 grid(static_cast<unsigned>(p.num_tokens),
                    static_cast<unsigned>((kd + k.g2.block_n - 1) / k.g2.block_n));
    MOETUNE_CUDA_CHECK(launch(k.gemm2, grid, dim3(k.g2.threads()), params,
                              static_cast<size_t>(k.g2.smem_bytes()), stream, fast_paths.pdl));
  }
  return core::Status::Ok();
}

}  // namespace parts
}  // namespace moetune::kernels::cuda
