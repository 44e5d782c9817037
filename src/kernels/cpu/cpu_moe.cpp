// cpu_tiled orchestration: align, tile lists, worker threads and the phase barrier. The math of
// a work item lives in cpu_moe_gemm.cpp; see cpu_moe.hpp for what the layer computes.
#include "kernels/cpu/cpu_moe.hpp"

#include <algorithm>
#include <atomic>
#include <barrier>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/device_info.hpp"
#include "kernels/cpu/bf16.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/cpu_moe_gemm.hpp"
#include "kernels/cpu/fp8_layer.hpp"

namespace moetune::kernels::cpu {
namespace {

core::Error invalid(std::string message) {
  return core::make_error(core::ErrorCode::kInvalidArgument, "run_cpu_moe", std::move(message));
}

/// Counts pairs per expert, pads each count to block_m, and lists pairs sorted by expert.
core::Status align(core::MoeProblem const& p, int block_m, int32_t const* topk_ids,
                   CpuMoeWorkspace& ws) {
  int64_t const num_pairs = p.num_tokens * p.top_k;
  ws.expert_counts.assign(p.num_experts, 0);
  for (int64_t pair = 0; pair < num_pairs; ++pair) {
    int32_t const e = topk_ids[pair];
    if (e < 0 || e >= p.num_experts) {
      return invalid("topk_ids[" + std::to_string(pair / p.top_k) + ", " +
                     std::to_string(pair % p.top_k) + "] = " + std::to_string(e) +
                     " is outside [0, " + std::to_string(p.num_experts) + "); fix the routing");
    }
    ++ws.expert_counts[e];
  }
  ws.expert_offsets.assign(p.num_experts + 1, 0);
  for (int64_t e = 0; e < p.num_experts; ++e) {
    int32_t const padded = (ws.expert_counts[e] + block_m - 1) / block_m * block_m;
    ws.expert_offsets[e + 1] = ws.expert_offsets[e] + padded;
  }
  ws.sorted_pairs.assign(ws.expert_offsets[p.num_experts], -1);
  std::vector<int32_t> next(ws.expert_offsets.begin(), ws.expert_offsets.end() - 1);
  for (int64_t pair = 0; pair < num_pairs; ++pair) {
    ws.sorted_pairs[next[topk_ids[pair]]++] = static_cast<int32_t>(pair);
  }
  return core::Status::Ok();
}

/// Tiles of one GEMM with `num_cols` output columns, expert by expert; within an expert, groups
/// of group_m m-blocks walk all n-blocks before the next group (vLLM's GROUP_SIZE_M raster).
void build_tiles(CpuMoeWorkspace const& ws, core::TileConfig const& tile, int64_t num_cols,
                 std::vector<MoeTile>& tiles) {
  tiles.clear();
  int64_t const num_nb = (num_cols + tile.block_n - 1) / tile.block_n;
  for (size_t e = 0; e + 1 < ws.expert_offsets.size(); ++e) {
    int64_t const num_mb = (ws.expert_offsets[e + 1] - ws.expert_offsets[e]) / tile.block_m;
    int64_t const per_group = int64_t{tile.group_m} * num_nb;
    for (int64_t id = 0; id < num_mb * num_nb; ++id) {
      int64_t const first_mb = id / per_group * tile.group_m;
      int64_t const group_rows = std::min<int64_t>(num_mb - first_mb, tile.group_m);
      int64_t const mb = first_mb + (id % per_group) % group_rows;
      int64_t const nb = (id % per_group) / group_rows;
      MoeTile t;
      t.expert = static_cast<int32_t>(e);
      t.row0 = static_cast<int32_t>(ws.expert_offsets[e] + mb * tile.block_m);
      t.rows = std::min<int32_t>(tile.block_m, ws.expert_counts[e] - mb * tile.block_m);
      t.col0 = static_cast<int32_t>(nb * tile.block_n);
      t.cols = static_cast<int32_t>(std::min<int64_t>(tile.block_n, num_cols - t.col0));
      tiles.push_back(t);
    }
  }
}

/// fp8 layers: rows [begin, end) of h that hold a pair, rounded to bf16 (as the GPU's GEMM1 stores
/// h) and quantised and dequantised as its quant kernel does.
template <class T>
void requantise_h(detail::MoeRunContext<T> const& ctx, int64_t begin, int64_t end) {
  if constexpr (std::is_same_v<T, float>) {
    for (int64_t row = begin; row < end; ++row) {
      if (ctx.ws->sorted_pairs[static_cast<size_t>(row)] < 0) continue;
      float* h = ctx.inter + row * ctx.inter_size;
      for (int64_t c = 0; c < ctx.inter_size; ++c) h[c] = round_to_bf16(h[c]);
      dequantised_row(h, ctx.inter_size, ctx.fp8_block, ctx.fp8_h_scale, h);
    }
  }
}

/// Phases run by every worker, separated by a barrier. Work items are handed out through
/// atomic counters; which thread runs an item never changes what the item computes.
template <class T>
void run_phases(detail::MoeRunContext<T> const& ctx, int num_threads, int threads1, int threads2,
                int64_t num_tokens) {
  CpuMoeWorkspace& ws = *ctx.ws;
  int const split1 = ctx.config.gemm1.pipeline.split_k;
  int const split2 = ctx.config.gemm2.pipeline.split_k;
  int64_t const tiles1 = static_cast<int64_t>(ws.tiles1.size());
  int64_t const tiles2 = static_cast<int64_t>(ws.tiles2.size());
  std::atomic<int64_t> counters[4] = {0, 0, 0, 0};
  std::barrier sync(num_threads);

  auto drain = [](std::atomic<int64_t>& counter, int64_t count, auto&& fn) {
    for (int64_t item = counter.fetch_add(1); item < count; item = counter.fetch_add(1)) fn(item);
  };
  auto worker = [&](int tid) {
    CpuThreadScratch& s = ws.thread_scratch[tid];
    if (tid < threads1) {
      drain(counters[0], tiles1 * split1, [&](int64_t i) { detail::gemm1_item(ctx, i, s); });
    }
    sync.arrive_and_wait();
    if (split1 > 1) {
      if (tid < threads1) {
        drain(counters[1], tiles1, [&](int64_t i) { detail::gemm1_reduce(ctx, i, s); });
      }
      sync.arrive_and_wait();
    }
    if (ctx.fp8_h) {  // a fixed contiguous range of h's rows per thread (GEMM2's threads)
      if (tid < threads2) {
        requantise_h(ctx, ctx.padded_rows * tid / threads2, ctx.padded_rows * (tid + 1) / threads2);
      }
      sync.arrive_and_wait();
    }
    if (tid < threads2) {
      drain(counters[2], tiles2 * split2, [&](int64_t i) { detail::gemm2_item(ctx, i, s); });
    }
    sync.arrive_and_wait();
    if (split2 > 1) {
      if (tid < threads2) {
        drain(counters[3], tiles2, [&](int64_t i) { detail::gemm2_reduce(ctx, i, s); });
      }
      sync.arrive_and_wait();
    }
    // Combine: a fixed contiguous token range per thread (GEMM2's threads).
    if (tid < threads2) {
      int64_t const begin = num_tokens * tid / threads2;
      int64_t const end = num_tokens * (tid + 1) / threads2;
      detail::combine_tokens(ctx, begin, end);
    }
  };

  std::vector<std::thread> pool;
  pool.reserve(num_threads - 1);
  for (int tid = 1; tid < num_threads; ++tid) pool.emplace_back(worker, tid);
  worker(0);
  for (auto& thread : pool) thread.join();
}

core::Status check_fp8_scales(core::MoeProblem const& p, CpuMoeArgs const& a) {
  bool const tensor = p.quant == core::Quant::kFp8Tensor;
  if (a.w1_scale == nullptr || a.w2_scale == nullptr ||
      (tensor && (a.a1_scale == nullptr || a.a2_scale == nullptr))) {
    return invalid(std::string("quant ") + std::string(core::to_string(p.quant)) +
                   " needs w1_scale and w2_scale" + (tensor ? ", a1_scale and a2_scale" : "") +
                   "; one is null: pass every scale of the fp8 layer");
  }
  return core::Status::Ok();
}

/// The fp8 layer's inputs in fp32 (x quantised and dequantised, weights dequantised, biases
/// widened) in `ws`, and the args that point at them (the output at ws.fp8_out).
CpuMoeArgs dequantise_fp8_inputs(core::MoeProblem const& p, CpuMoeArgs const& a,
                                 CpuMoeWorkspace& ws) {
  bool const block = p.quant == core::Quant::kFp8Block;
  int64_t const k = p.hidden_size, n1 = core::gemm1_n(p), e = p.num_experts;
  ws.fp8_x.resize(static_cast<size_t>(p.num_tokens * k));
  std::vector<float> row(static_cast<size_t>(k));
  auto const* x = static_cast<uint16_t const*>(a.x);
  for (int64_t t = 0; t < p.num_tokens; ++t) {
    for (int64_t c = 0; c < k; ++c) row[c] = bf16_bits_to_float(x[t * k + c]);
    dequantised_row(row.data(), k, block, block ? 0.0f : *a.a1_scale, ws.fp8_x.data() + t * k);
  }
  ws.fp8_w1.resize(static_cast<size_t>(e * n1 * k));
  ws.fp8_w2.resize(static_cast<size_t>(e * k * p.intermediate_size));
  dequantise_weights(static_cast<uint8_t const*>(a.w1), a.w1_scale, block, e, n1, k,
                     ws.fp8_w1.data());
  dequantise_weights(static_cast<uint8_t const*>(a.w2), a.w2_scale, block, e, k,
                     p.intermediate_size, ws.fp8_w2.data());
  auto widen = [](void const* b, int64_t n, std::vector<float>& out) {
    out.resize(b != nullptr ? static_cast<size_t>(n) : 0);
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = bf16_bits_to_float(static_cast<uint16_t const*>(b)[i]);
    }
  };
  widen(p.has_bias ? a.b1 : nullptr, e * n1, ws.fp8_b1);
  widen(p.has_bias ? a.b2 : nullptr, e * k, ws.fp8_b2);
  ws.fp8_out.resize(static_cast<size_t>(p.num_tokens * k));
  CpuMoeArgs f = a;
  f.x = ws.fp8_x.data();
  f.w1 = ws.fp8_w1.data();
  f.w2 = ws.fp8_w2.data();
  f.b1 = p.has_bias ? ws.fp8_b1.data() : nullptr;
  f.b2 = p.has_bias ? ws.fp8_b2.data() : nullptr;
  f.out = ws.fp8_out.data();
  return f;
}

template <class T>
void run_typed(core::MoeProblem const& p, core::MoeConfig const& config, CpuMoeArgs const& args,
               CpuMoeWorkspace& ws, FastPaths const& fast_paths,
               core::Quant fp8 = core::Quant::kNone, float h_scale = 0) {
  bool const gated = core::is_gated(p.activation);
  detail::MoeRunContext<T> ctx;
  ctx.fp8_h = fp8 != core::Quant::kNone;
  ctx.fp8_block = fp8 == core::Quant::kFp8Block;
  ctx.fp8_h_scale = h_scale;
  ctx.activation = p.activation;
  ctx.hidden = p.hidden_size;
  ctx.inter_size = p.intermediate_size;
  ctx.gemm1_cols = core::gemm1_n(p);
  ctx.top_k = p.top_k;
  ctx.padded_rows = ws.expert_offsets.back();
  ctx.config = config;
  ctx.fast_paths = fast_paths;
  ctx.x = static_cast<T const*>(args.x);
  ctx.w1 = static_cast<T const*>(args.w1);
  ctx.w2 = static_cast<T const*>(args.w2);
  ctx.b1 = static_cast<T const*>(args.b1);
  ctx.b2 = static_cast<T const*>(args.b2);
  ctx.topk_weights = args.topk_weights;
  ctx.out = static_cast<T*>(args.out);
  ctx.ws = &ws;

  std::vector<T>* inter_buffer;
  if constexpr (std::is_same_v<T, float>) {
    inter_buffer = &ws.inter_f32;
  } else {
    inter_buffer = &ws.inter_bf16;
  }
  inter_buffer->resize(static_cast<size_t>(ctx.padded_rows * p.intermediate_size));
  ctx.inter = inter_buffer->data();
  ws.pair_out.resize(static_cast<size_t>(p.num_tokens * p.top_k * p.hidden_size));
  int const max_split = std::max(config.gemm1.pipeline.split_k, config.gemm2.pipeline.split_k);
  if (max_split > 1) {
    int64_t const cols = std::max(ctx.gemm1_cols, p.hidden_size);
    ws.partials.resize(static_cast<size_t>(max_split * ctx.padded_rows * cols));
  }

  int const threads1 = resolve_num_threads(config.gemm1);
  int const threads2 = resolve_num_threads(config.gemm2);
  int const num_threads = std::max(threads1, threads2);
  ws.thread_scratch.resize(std::max<size_t>(ws.thread_scratch.size(), num_threads));
  for (int tid = 0; tid < num_threads; ++tid) {
    detail::size_thread_scratch(config, gated, ws.thread_scratch[tid]);
  }
  run_phases(ctx, num_threads, threads1, threads2, p.num_tokens);
}

}  // namespace

int resolve_num_threads(core::KernelConfig const& k) {
  if (k.launch.num_threads > 0) {
    return k.launch.num_threads;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

core::Status run_cpu_moe(core::MoeProblem const& problem, core::MoeConfig const& config,
                         CpuMoeArgs const& args, CpuMoeWorkspace& ws, FastPaths const& fast_paths) {
  MOETUNE_RETURN_IF_ERROR(cpu_tiled_can_implement(problem, config));
  if (problem.num_tokens == 0) {
    return core::Status::Ok();
  }
  if (args.x == nullptr || args.topk_ids == nullptr || args.topk_weights == nullptr ||
      args.w1 == nullptr || args.w2 == nullptr || args.out == nullptr) {
    return invalid("a tensor pointer is null with M = " + std::to_string(problem.num_tokens) +
                   "; pass x, topk_ids, topk_weights, w1, w2 and out");
  }
  if (problem.has_bias && (args.b1 == nullptr || args.b2 == nullptr)) {
    return invalid("problem.has_bias is set but b1 or b2 is null; pass both biases or clear it");
  }
  int const block_m = config.gemm1.tile.block_m;
  MOETUNE_RETURN_IF_ERROR(align(problem, block_m, args.topk_ids, ws));
  build_tiles(ws, config.gemm1.tile, problem.intermediate_size, ws.tiles1);
  build_tiles(ws, config.gemm2.tile, problem.hidden_size, ws.tiles2);
  if (problem.quant != core::Quant::kNone) {
    MOETUNE_RETURN_IF_ERROR(check_fp8_scales(problem, args));
    double const floats =
        2.0 * static_cast<double>(problem.num_tokens * problem.hidden_size) +
        static_cast<double>(problem.num_experts * problem.hidden_size) *
            static_cast<double>(core::gemm1_n(problem) + problem.intermediate_size);
    MOETUNE_RETURN_IF_ERROR(core::check_host_bytes(
        4.0 * floats, "run_cpu_moe",
        "the fp32 copies of an fp8 layer (" + core::to_string(problem) + ")",
        "run this fp8 layer on the cuda backend, or a smaller one on the cpu"));
    CpuMoeArgs const f = dequantise_fp8_inputs(problem, args, ws);
    core::MoeProblem fp32 = problem;
    fp32.dtype = core::DType::kFp32;
    fp32.quant = core::Quant::kNone;
    float const h_scale = problem.quant == core::Quant::kFp8Tensor ? *args.a2_scale : 0.0f;
    run_typed<float>(fp32, config, f, ws, fast_paths, problem.quant, h_scale);
    auto* out = static_cast<uint16_t*>(args.out);
    for (size_t i = 0; i < ws.fp8_out.size(); ++i) out[i] = float_to_bf16_bits(ws.fp8_out[i]);
  } else if (problem.dtype == core::DType::kBf16) {
    run_typed<uint16_t>(problem, config, args, ws, fast_paths);
  } else {
    run_typed<float>(problem, config, args, ws, fast_paths);
  }
  return core::Status::Ok();
}

}  // namespace moetune::kernels::cpu
