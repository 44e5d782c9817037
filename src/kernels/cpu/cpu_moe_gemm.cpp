// cpu_tiled tile GEMMs: pack A and B for one block_k step into fp32 panels, multiply-accumulate
// into an fp32 tile, then run the epilogue. Each accumulator element sums its products in
// increasing depth order, so the bits depend on the config only (see cpu_moe.hpp).
#include "kernels/cpu/cpu_moe_gemm.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/bf16.hpp"
#include "kernels/cpu/microkernel.hpp"

namespace moetune::kernels::cpu::detail {
namespace {

inline float to_f32(float v) { return v; }
inline float to_f32(uint16_t v) { return bf16_bits_to_float(v); }
template <class T>
T from_f32(float v);
template <>
float from_f32<float>(float v) {
  return v;
}
template <>
uint16_t from_f32<uint16_t>(float v) {
  return float_to_bf16_bits(v);
}

float activate(core::Activation act, float h) {
  switch (act) {
    case core::Activation::kRelu2: return h > 0.0f ? h * h : 0.0f;
    case core::Activation::kGelu: return 0.5f * h * (1.0f + std::erf(h * 0.70710678118654752f));
    case core::Activation::kGeluTanh:
      return 0.5f * h * (1.0f + std::tanh(0.79788456080286536f * (h + 0.044715f * h * h * h)));
    case core::Activation::kSiluGated:
    case core::Activation::kSwigluOai: break;
  }
  return h;
}

/// The gated activations of (gate, up).
float gated_act(core::Activation act, float gate, float up) {
  if (act == core::Activation::kSwigluOai) {
    float const limit = static_cast<float>(core::kSwigluOaiLimit);
    float const g = std::min(gate, limit);
    float const u = std::clamp(up, -limit, limit);
    return (u + 1.0f) * g / (1.0f + std::exp(-static_cast<float>(core::kSwigluOaiAlpha) * g));
  }
  return gate / (1.0f + std::exp(-gate)) * up;
}

/// Bias element i of expert e's row of `n` (0 without biases).
template <class T>
float bias_at(T const* bias, int64_t e, int64_t n, int64_t i) {
  return bias == nullptr ? 0.0f : to_f32(bias[e * n + i]);
}

/// Depth rows of packed B written per pass over the columns (see accumulate).
constexpr int kPackDepth = 16;

/// Zeroes the accumulator, then adds A * B^T over depth [k_begin, k_end) in block_k steps.
/// a_rows[i] and b_rows[j] point at row starts of depth-long rows of T.
template <class T>
void accumulate(CpuThreadScratch& s, int rows, int width, int64_t k_begin, int64_t k_end,
                int block_k, bool register_tiles) {
  std::fill_n(s.acc.data(), static_cast<size_t>(rows) * width, 0.0f);
  for (int64_t k0 = k_begin; k0 < k_end; k0 += block_k) {
    int const depth = static_cast<int>(std::min<int64_t>(block_k, k_end - k0));
    for (int i = 0; i < rows; ++i) {
      T const* src = static_cast<T const*>(s.a_rows[i]) + k0;
      float* dst = s.a_pack.data() + static_cast<size_t>(i) * depth;
      for (int kk = 0; kk < depth; ++kk) dst[kk] = to_f32(src[kk]);
    }
    // NOTE: transposed in slabs of kPackDepth rows: writing a whole column at once strides by
    // width floats, and at block_k >= 128 those lines alias in L1 and miss on every store (4x
    // slower). A slab's kPackDepth lines stay in L1 while every column fills them.
    for (int kk0 = 0; kk0 < depth; kk0 += kPackDepth) {
      int const kk1 = std::min(depth, kk0 + kPackDepth);
      for (int j = 0; j < width; ++j) {
        T const* src = static_cast<T const*>(s.b_rows[j]) + k0;
        float* dst = s.b_pack.data() + j;
        for (int kk = kk0; kk < kk1; ++kk) dst[static_cast<size_t>(kk) * width] = to_f32(src[kk]);
      }
    }
    (register_tiles ? microkernel : microkernel_plain)(s.a_pack.data(), rows, depth,
                                                       s.b_pack.data(), width, s.acc.data());
  }
}

/// Depth range [begin, end) of split `split` of `num_splits` over whole block_k steps.
std::pair<int64_t, int64_t> split_range(int64_t depth, int block_k, int split, int num_splits) {
  int64_t const steps = (depth + block_k - 1) / block_k;
  int64_t const first = steps * split / num_splits;
  int64_t const last = steps * (split + 1) / num_splits;
  return {first * block_k, std::min(last * block_k, depth)};
}

template <class T>
int gemm1_width(MoeRunContext<T> const& ctx, MoeTile const& t) {
  return core::is_gated(ctx.activation) ? 2 * t.cols : t.cols;
}

/// Column of the [rows, N1] GEMM1 result that accumulator column j holds.
template <class T>
int64_t gemm1_col(MoeRunContext<T> const& ctx, MoeTile const& t, int j) {
  return j < t.cols ? t.col0 + j : ctx.inter_size + t.col0 + (j - t.cols);
}

template <class T>
void gemm1_epilogue(MoeRunContext<T> const& ctx, MoeTile const& t, CpuThreadScratch& s) {
  int const width = gemm1_width(ctx, t);
  bool const gated = core::is_gated(ctx.activation);
  for (int i = 0; i < t.rows; ++i) {
    float const* c = s.acc.data() + static_cast<size_t>(i) * width;
    T* dst = ctx.inter + (t.row0 + i) * ctx.inter_size + t.col0;
    for (int j = 0; j < t.cols; ++j) {
      float const h = c[j] + bias_at(ctx.b1, t.expert, ctx.gemm1_cols, t.col0 + j);
      float const up = gated ? c[t.cols + j] + bias_at(ctx.b1, t.expert, ctx.gemm1_cols,
                                                       ctx.inter_size + t.col0 + j)
                             : 0.0f;
      dst[j] = from_f32<T>(gated ? gated_act(ctx.activation, h, up) : activate(ctx.activation, h));
    }
  }
}

template <class T>
void gemm2_epilogue(MoeRunContext<T> const& ctx, MoeTile const& t, CpuThreadScratch& s) {
  for (int i = 0; i < t.rows; ++i) {
    int32_t const pair = ctx.ws->sorted_pairs[t.row0 + i];
    float const weight = ctx.topk_weights[pair];
    float const* c = s.acc.data() + static_cast<size_t>(i) * t.cols;
    float* dst = ctx.ws->pair_out.data() + pair * ctx.hidden + t.col0;
    for (int j = 0; j < t.cols; ++j) {
      dst[j] = weight * (c[j] + bias_at(ctx.b2, t.expert, ctx.hidden, t.col0 + j));
    }
  }
}

/// Stores (or, with `load`, sums in split order) the split partials of a tile.
template <class T, class ColFn>
void store_partial(MoeRunContext<T> const& ctx, MoeTile const& t, int width, int64_t acc_cols,
                   int split, CpuThreadScratch& s, ColFn col_of) {
  float* base = ctx.ws->partials.data() + split * ctx.padded_rows * acc_cols;
  for (int i = 0; i < t.rows; ++i) {
    float* row = base + (t.row0 + i) * acc_cols;
    for (int j = 0; j < width; ++j) row[col_of(j)] = s.acc[static_cast<size_t>(i) * width + j];
  }
}

template <class T, class ColFn>
void sum_partials(MoeRunContext<T> const& ctx, MoeTile const& t, int width, int64_t acc_cols,
                  int num_splits, CpuThreadScratch& s, ColFn col_of) {
  for (int i = 0; i < t.rows; ++i) {
    for (int j = 0; j < width; ++j) {
      int64_t const offset = (t.row0 + i) * acc_cols + col_of(j);
      float sum = ctx.ws->partials[offset];
      for (int split = 1; split < num_splits; ++split) {
        sum += ctx.ws->partials[split * ctx.padded_rows * acc_cols + offset];
      }
      s.acc[static_cast<size_t>(i) * width + j] = sum;
    }
  }
}

template <class T>
void gemm1_pointers(MoeRunContext<T> const& ctx, MoeTile const& t, CpuThreadScratch& s) {
  for (int i = 0; i < t.rows; ++i) {
    int64_t const token = ctx.ws->sorted_pairs[t.row0 + i] / ctx.top_k;
    s.a_rows[i] = ctx.x + token * ctx.hidden;
  }
  T const* w1e = ctx.w1 + t.expert * ctx.gemm1_cols * ctx.hidden;
  int const width = gemm1_width(ctx, t);
  for (int j = 0; j < width; ++j) s.b_rows[j] = w1e + gemm1_col(ctx, t, j) * ctx.hidden;
}

template <class T>
void gemm2_pointers(MoeRunContext<T> const& ctx, MoeTile const& t, CpuThreadScratch& s) {
  for (int i = 0; i < t.rows; ++i) s.a_rows[i] = ctx.inter + (t.row0 + i) * ctx.inter_size;
  T const* w2e = ctx.w2 + t.expert * ctx.hidden * ctx.inter_size;
  for (int j = 0; j < t.cols; ++j) s.b_rows[j] = w2e + (t.col0 + j) * ctx.inter_size;
}

}  // namespace

void size_thread_scratch(core::MoeConfig const& config, bool gated, CpuThreadScratch& scratch) {
  auto const& t1 = config.gemm1.tile;
  auto const& t2 = config.gemm2.tile;
  size_t const width = std::max<size_t>((gated ? 2 : 1) * t1.block_n, t2.block_n);
  size_t const rows = std::max(t1.block_m, t2.block_m);
  size_t const depth = std::max(t1.block_k, t2.block_k);
  scratch.a_pack.resize(rows * depth);
  scratch.b_pack.resize(depth * width);
  scratch.acc.resize(rows * width);
  scratch.a_rows.resize(rows);
  scratch.b_rows.resize(width);
}

template <class T>
void gemm1_item(MoeRunContext<T> const& ctx, int64_t item, CpuThreadScratch& s) {
  int const num_splits = ctx.config.gemm1.pipeline.split_k;
  MoeTile const& t = ctx.ws->tiles1[item / num_splits];
  int const split = static_cast<int>(item % num_splits);
  int const width = gemm1_width(ctx, t);
  int const block_k = ctx.config.gemm1.tile.block_k;
  gemm1_pointers(ctx, t, s);
  auto const [k_begin, k_end] = split_range(ctx.hidden, block_k, split, num_splits);
  accumulate<T>(s, t.rows, width, k_begin, k_end, block_k, ctx.fast_paths.cpu_register_tiles);
  if (num_splits == 1) {
    gemm1_epilogue(ctx, t, s);
    return;
  }
  store_partial(ctx, t, width, ctx.gemm1_cols, split, s,
                [&](int j) { return gemm1_col(ctx, t, j); });
}

template <class T>
void gemm1_reduce(MoeRunContext<T> const& ctx, int64_t tile, CpuThreadScratch& s) {
  MoeTile const& t = ctx.ws->tiles1[tile];
  sum_partials(ctx, t, gemm1_width(ctx, t), ctx.gemm1_cols, ctx.config.gemm1.pipeline.split_k, s,
               [&](int j) { return gemm1_col(ctx, t, j); });
  gemm1_epilogue(ctx, t, s);
}

template <class T>
void gemm2_item(MoeRunContext<T> const& ctx, int64_t item, CpuThreadScratch& s) {
  int const num_splits = ctx.config.gemm2.pipeline.split_k;
  MoeTile const& t = ctx.ws->tiles2[item / num_splits];
  int const split = static_cast<int>(item % num_splits);
  int const block_k = ctx.config.gemm2.tile.block_k;
  gemm2_pointers(ctx, t, s);
  auto const [k_begin, k_end] = split_range(ctx.inter_size, block_k, split, num_splits);
  accumulate<T>(s, t.rows, t.cols, k_begin, k_end, block_k, ctx.fast_paths.cpu_register_tiles);
  if (num_splits == 1) {
    gemm2_epilogue(ctx, t, s);
    return;
  }
  store_partial(ctx, t, t.cols, ctx.hidden, split, s, [&](int j) { return t.col0 + j; });
}

template <class T>
void gemm2_reduce(MoeRunContext<T> const& ctx, int64_t tile, CpuThreadScratch& s) {
  MoeTile const& t = ctx.ws->tiles2[tile];
  sum_partials(ctx, t, t.cols, ctx.hidden, ctx.config.gemm2.pipeline.split_k, s,
               [&](int j) { return t.col0 + j; });
  gemm2_epilogue(ctx, t, s);
}

template <class T>
void combine_tokens(MoeRunContext<T> const& ctx, int64_t token_begin, int64_t token_end) {
  float const* pair_out = ctx.ws->pair_out.data();
  for (int64_t t = token_begin; t < token_end; ++t) {
    float const* first = pair_out + t * ctx.top_k * ctx.hidden;
    T* dst = ctx.out + t * ctx.hidden;
    for (int64_t c = 0; c < ctx.hidden; ++c) {
      float sum = first[c];
      for (int64_t k = 1; k < ctx.top_k; ++k) sum += first[k * ctx.hidden + c];
      dst[c] = from_f32<T>(sum);
    }
  }
}

#define MOETUNE_INSTANTIATE_CPU_MOE(T)                                                \
  template void gemm1_item<T>(MoeRunContext<T> const&, int64_t, CpuThreadScratch&);   \
  template void gemm1_reduce<T>(MoeRunContext<T> const&, int64_t, CpuThreadScratch&); \
  template void gemm2_item<T>(MoeRunContext<T> const&, int64_t, CpuThreadScratch&);   \
  template void gemm2_reduce<T>(MoeRunContext<T> const&, int64_t, CpuThreadScratch&); \
  template void combine_tokens<T>(MoeRunContext<T> const&, int64_t, int64_t);
MOETUNE_INSTANTIATE_CPU_MOE(float)
MOETUNE_INSTANTIATE_CPU_MOE(uint16_t)
#undef MOETUNE_INSTANTIATE_CPU_MOE

}  // namespace moetune::kernels::cpu::detail
