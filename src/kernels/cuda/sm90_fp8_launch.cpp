#include "kernels/cuda/sm90_fp8_launch.hpp"

#include <algorithm>
#include <cstddef>
#include <string>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/sm90_fp8_geometry.hpp"
#include "kernels/cuda/sm90_tma_host.hpp"

namespace moetune::kernels::cuda {
namespace {

// Host mirrors of the device parameter structs (sm90_fp8_quant_kernel.cuh,
// sm90_fp8_gemm_kernel.cuh); field order and types must match exactly.
struct Fp8QuantParams {
  const void* src;
  unsigned char* dst;
  float* scale;
  const float* tensor_scale;
  const int32_t* sorted_pairs;
  const int32_t* num_blocks;
  int block_m;
  long long rows;
  int cols;
};
static_assert(sizeof(Fp8QuantParams) == 72, "Fp8QuantParams must match the device struct");

struct Fp8GemmParams {
  const unsigned char* a;
  const float* a_scale;
  const unsigned char* b;
  const float* b_scale;
  void* out;
  const int32_t* sorted_pairs;
  const int32_t* block_expert;
  const int32_t* num_blocks;
  const float* sorted_weights;
  const void* bias;
  int k_dim, n_dim, b_rows_per_expert, top_k, max_blocks;
};
static_assert(sizeof(Fp8GemmParams) == 104, "Fp8GemmParams must match the device struct");

// sm90_fp8_ws_kernel.cuh Fp8WsParams: the bf16 kernels' WsGemmParams, then the scales.
struct Fp8WsParams {
  parts::WsGemmParams ws;
  const float* a_scale;
  const float* b_scale;
  const float* out_scale;
  float* h_scales;
};
static_assert(offsetof(Fp8WsParams, a_scale) == 512 && offsetof(Fp8WsParams, b_scale) == 520 &&
                  offsetof(Fp8WsParams, out_scale) == 528 && offsetof(Fp8WsParams, h_scales) == 536,
              "Fp8WsParams must match the device struct (WsGemmParams, four scale pointers)");

/// Where a tma_ws GEMM1 that stores hq takes its scales: per-tensor the static scale of GEMM2's
/// input (read), block-scaled the group scales hs (written). Both null: GEMM1 stores bf16 h.
struct HqOut {
  const float* tensor_scale = nullptr;
  float* group_scales = nullptr;
};

core::Status missing(const char* name, core::Quant q) {
  return core::make_error(core::ErrorCode::kInvalidArgument, "launch_fp8_layer",
                          std::string(name) + " is null but quant " +
                              std::string(core::to_string(q)) + " needs it; pass the " +
                              (q == core::Quant::kFp8Block ? "block" : "static") + " scales");
}

core::Status check_scales(core::MoeProblem const& p, MoeArgs const& a) {
  if (a.w1_scale == nullptr) return missing("w1_scale", p.quant);
  if (a.w2_scale == nullptr) return missing("w2_scale", p.quant);
  if (p.quant == core::Quant::kFp8Tensor) {
    if (a.a1_scale == nullptr) return missing("a1_scale", p.quant);
    if (a.a2_scale == nullptr) return missing("a2_scale", p.quant);
  }
  return core::Status::Ok();
}

/// One warp per row and 128-column group, 8 warps a CTA, at most 16 CTAs per SM.
core::Status launch_quant(Sm90GatherKernels const& k, Fp8QuantParams qp, cudaStream_t stream,
                          bool pdl) {
  const long long units = qp.rows * (qp.cols / 128);
  const unsigned grid = static_cast<unsigned>(
      std::clamp<long long>((units + 7) / 8, 1, static_cast<long long>(k.sm_count) * 16));
  void* params[] = {&qp};
  MOETUNE_CUDA_CHECK(parts::launch(k.quant, dim3(grid), dim3(256), params, 0, stream, pdl));
  return core::Status::Ok();
}

core::Status launch_fp8_gemm(cudaKernel_t f, GemmGeometry const& g, Fp8GemmParams gp,
                             parts::LayerBuffers const& b, cudaStream_t stream, bool pdl) {
  const unsigned n_blocks = static_cast<unsigned>((gp.n_dim + g.block_n - 1) / g.block_n);
  const unsigned tiles = static_cast<unsigned>(b.mb) * n_blocks;
  void* params[] = {&gp};
  MOETUNE_CUDA_CHECK(
      parts::launch(f, dim3(tiles), dim3(g.threads()), params, g.smem_bytes(), stream, pdl));
  return core::Status::Ok();
}

/// A tma_ws fp8 GEMM (sm90_fp8_ws_kernel.cuh): at most one CTA per SM walks the tiles. Its
/// producer reads fp8 rows as 2-byte units: k_dim and the tensor maps' columns are K / 2, so a
/// 64-unit box row is 128 e4m3 values. a_rows: GEMM2's hq rows (TMA), 0 for GEMM1 (gathered).
/// hq_out: GEMM1 stores hq (gp.out is then hq), fp8_gemm1_writes_hq: with the static scale of
/// GEMM2's input per-tensor, with the group scales b.hs block-scaled.
core::Status launch_fp8_ws_gemm(Sm90GatherKernels const& k, cudaKernel_t f, GemmGeometry const& g,
                                Fp8GemmParams const& gp, uint64_t a_rows, core::MoeProblem const& p,
                                parts::LayerBuffers const& b, cudaStream_t stream, bool pdl,
                                HqOut hq_out) {
  Fp8WsParams wp{};
  const uint64_t units = static_cast<uint64_t>(gp.k_dim) / 2;
  wp.ws.g = parts::GemmParams{.a = gp.a,
                              .b = gp.b,
                              .out = gp.out,
                              .sorted_pairs = gp.sorted_pairs,
                              .block_expert = gp.block_expert,
                              .num_blocks = gp.num_blocks,
                              .sorted_weights = gp.sorted_weights,
                              .k_dim = static_cast<int>(units),
                              .n_dim = gp.n_dim,
                              .b_rows_per_expert = gp.b_rows_per_expert,
                              .top_k = gp.top_k,
                              .max_blocks = gp.max_blocks,
                              .split_k = 1,
                              .num_pairs = b.pairs,
                              .m_sub = 1,
                              .sub_row0 = nullptr,
                              .bias = gp.bias};
  wp.a_scale = gp.a_scale;
  wp.b_scale = gp.b_scale;
  wp.out_scale = hq_out.tensor_scale;
  wp.h_scales = hq_out.group_scales;
  MOETUNE_RETURN_IF_ERROR(
      encode_tma_2d(&wp.ws.tma_b, gp.b, static_cast<uint64_t>(p.num_experts) * gp.b_rows_per_expert,
                    units, static_cast<uint32_t>(g.block_n / g.warps_n), "fp8 weights"));
  if (a_rows > 0) {
    MOETUNE_RETURN_IF_ERROR(encode_tma_2d(&wp.ws.tma_a, gp.a, a_rows, units,
                                          static_cast<uint32_t>(g.block_m), "fp8 h"));
  }
  const unsigned n_blocks = static_cast<unsigned>((gp.n_dim + g.block_n - 1) / g.block_n);
  const unsigned tiles = static_cast<unsigned>(b.mb) * n_blocks;
  const unsigned grid = std::min(tiles, static_cast<unsigned>(k.sm_count));
  void* params[] = {&wp};
  MOETUNE_CUDA_CHECK(
      parts::launch(f, dim3(grid), dim3(g.threads()), params, g.smem_bytes(), stream, pdl));
  return core::Status::Ok();
}

/// One fp8 GEMM: the tma_ws kernel or the cp.async one (hq_out: launch_fp8_ws_gemm's).
core::Status launch_gemm(Sm90GatherKernels const& k, bool is_gemm1, Fp8GemmParams const& gp,
                         core::MoeProblem const& p, parts::LayerBuffers const& b,
                         cudaStream_t stream, bool pdl, HqOut hq_out = {}) {
  cudaKernel_t f = is_gemm1 ? k.gemm1 : k.gemm2;
  GemmGeometry const& g = is_gemm1 ? k.g1 : k.g2;
  if (!g.persistent()) return launch_fp8_gemm(f, g, gp, b, stream, pdl);
  const uint64_t a_rows = is_gemm1 ? 0 : static_cast<uint64_t>(b.mb) * b.align_m;
  return launch_fp8_ws_gemm(k, f, g, gp, a_rows, p, b, stream, pdl, hq_out);
}

/// GEMM1's input: x [M, K] in token order.
core::Status quantise_x(Sm90GatherKernels const& k, core::MoeProblem const& p, MoeArgs const& a,
                        parts::LayerBuffers const& b, cudaStream_t stream, bool pdl) {
  return launch_quant(k,
                      Fp8QuantParams{a.x, b.xq, b.xs, a.a1_scale, nullptr, nullptr, 0, p.num_tokens,
                                     static_cast<int>(p.hidden_size)},
                      stream, pdl);
}

/// GEMM2's input: h's rows of the valid blocks that hold a pair.
core::Status quantise_h(Sm90GatherKernels const& k, core::MoeProblem const& p, MoeArgs const& a,
                        parts::LayerBuffers const& b, cudaStream_t stream, bool pdl) {
  return launch_quant(k,
                      Fp8QuantParams{b.h, b.hq, b.hs, a.a2_scale, b.sorted_pairs, b.num_blocks,
                                     b.align_m, static_cast<long long>(b.mb) * b.align_m,
                                     static_cast<int>(p.intermediate_size)},
                      stream, pdl);
}

Fp8GemmParams gemm1_params(core::MoeProblem const& p, MoeArgs const& a,
                           parts::LayerBuffers const& b) {
  const bool block = p.quant == core::Quant::kFp8Block;
  return Fp8GemmParams{b.xq,
                       block ? b.xs : a.a1_scale,
                       static_cast<const unsigned char*>(a.w1),
                       a.w1_scale,
                       b.h,
                       b.sorted_pairs,
                       b.block_expert,
                       b.num_blocks,
                       b.sorted_weights,
                       a.b1,
                       static_cast<int>(p.hidden_size),
                       static_cast<int>(p.intermediate_size),
                       static_cast<int>(core::gemm1_n(p)),
                       static_cast<int>(p.top_k),
                       b.mb};
}

Fp8GemmParams gemm2_params(core::MoeProblem const& p, MoeArgs const& a,
                           parts::LayerBuffers const& b) {
  const bool block = p.quant == core::Quant::kFp8Block;
  return Fp8GemmParams{b.hq,
                       block ? b.hs : a.a2_scale,
                       static_cast<const unsigned char*>(a.w2),
                       a.w2_scale,
                       b.y,
                       b.sorted_pairs,
                       b.block_expert,
                       b.num_blocks,
                       b.sorted_weights,
                       nullptr,
                       static_cast<int>(p.intermediate_size),
                       static_cast<int>(p.hidden_size),
                       static_cast<int>(p.hidden_size),
                       static_cast<int>(p.top_k),
                       b.mb};
}

// sm90_fp8_decode_kernel.cuh Fp8DecodeParams.
struct Fp8DecodeParams {
  parts::DecodeParams d;
  const float* w_scale;
  const float* a_scale;
};

/// Tiny M (the decode kernels, launch.swap_ab): GEMM1 quantises x and routes itself, GEMM2
/// quantises h and combines: two launches (sm90_fp8_decode_kernel.cuh).
core::Status launch_fp8_decode(Sm90GatherKernels const& k, core::MoeProblem const& p,
                               MoeArgs const& a, parts::LayerBuffers const& b, cudaStream_t stream,
                               unsigned stages, bool pdl) {
  const int n1 = static_cast<int>(p.intermediate_size), kd = static_cast<int>(p.hidden_size);
  const int top_k = static_cast<int>(p.top_k), e = static_cast<int>(p.num_experts);
  if (stages & kStageGemm1) {
    Fp8DecodeParams dp{{a.x, a.w1, b.h, a.topk_ids, a.topk_weights, kd, n1,
                        static_cast<int>(core::gemm1_n(p)), top_k, b.pairs, e, a.b1},
                       a.w1_scale,
                       a.a1_scale};
    void* params[] = {&dp};
    const dim3 grid(static_cast<unsigned>(b.pairs),
                    static_cast<unsigned>((n1 + k.g1.block_n - 1) / k.g1.block_n));
    MOETUNE_CUDA_CHECK(parts::launch(k.gemm1, grid, dim3(k.g1.threads()), params,
                                     static_cast<size_t>(k.g1.smem_bytes()), stream, pdl));
  }
  if (stages & kStageGemm2) {
    Fp8DecodeParams dp{
        {b.h, a.w2, a.out, a.topk_ids, a.topk_weights, n1, kd, kd, top_k, b.pairs, e, a.b2},
        a.w2_scale,
        a.a2_scale};
    void* params[] = {&dp};
    const dim3 grid(static_cast<unsigned>(p.num_tokens),
                    static_cast<unsigned>((kd + k.g2.block_n - 1) / k.g2.block_n));
    MOETUNE_CUDA_CHECK(parts::launch(k.gemm2, grid, dim3(k.g2.threads()), params,
                                     static_cast<size_t>(k.g2.smem_bytes()), stream, pdl));
  }
  return core::Status::Ok();
}

}  // namespace

core::Status launch_fp8_layer(Sm90GatherKernels const& k, core::MoeProblem const& p,
                              MoeArgs const& args, parts::LayerBuffers const& b,
                              cudaStream_t stream, unsigned stages, FastPaths const& fast_paths) {
  MOETUNE_RETURN_IF_ERROR(check_scales(p, args));
  const bool pdl = fast_paths.pdl;
  if (k.g1.decode) return launch_fp8_decode(k, p, args, b, stream, stages, pdl);
  if (stages & kStageAlign) {
    MOETUNE_RETURN_IF_ERROR(parts::launch_align(k, p, args, b, stream, fast_paths));
  }
  const bool writes_hq = fp8_gemm1_writes_hq(k.g1);  // GEMM2's input needs no quant pass
  if (stages & kStageGemm1) {
    MOETUNE_RETURN_IF_ERROR(quantise_x(k, p, args, b, stream, pdl));
    Fp8GemmParams gp = gemm1_params(p, args, b);
    HqOut hq_out;
    if (writes_hq) {
      gp.out = b.hq;
      const bool block = p.quant == core::Quant::kFp8Block;
      hq_out = HqOut{block ? nullptr : args.a2_scale, block ? b.hs : nullptr};
    }
    MOETUNE_RETURN_IF_ERROR(launch_gemm(k, true, gp, p, b, stream, pdl, hq_out));
  }
  if (stages & kStageGemm2) {
    if (!writes_hq) MOETUNE_RETURN_IF_ERROR(quantise_h(k, p, args, b, stream, pdl));
    MOETUNE_RETURN_IF_ERROR(launch_gemm(k, false, gemm2_params(p, args, b), p, b, stream, pdl));
  }
  if (stages & kStageCombine) {
    MOETUNE_RETURN_IF_ERROR(parts::launch_combine(k, p, args, b, stream, pdl));
  }
  return core::Status::Ok();
}

}  // namespace moetune::kernels::cuda
