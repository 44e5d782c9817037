#include "kernels/cuda/sm90_gather_launch.hpp"

#include <cuda.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <mutex>
#include <tuple>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/jit.hpp"
#include "kernels/cuda/sm90_tma_host.hpp"

namespace moetune::kernels::cuda {
namespace {

// Host mirrors of the device parameter structs (sm90_align_kernel.cuh, sm90_gather_kernel.cuh);
// field order and types must match exactly.
struct AlignParams {
  const int32_t* topk_ids;
  int32_t* sorted_pairs;
  int32_t* block_expert;
  int32_t* num_blocks;
  int num_pairs, num_experts, max_blocks;
};
struct AlignMultiParams {
  AlignParams base;
  int32_t* hist;
  int num_chunks;
};
constexpr int kAlignChunk = 4096;           // sm90_align_kernel.cuh
constexpr int kSingleCtaAlignPairs = 8192;  // above this, the multi-CTA align is faster
struct GemmParams {
  const void* a;
  const void* b;
  void* out;
  const int32_t* sorted_pairs;
  const int32_t* block_expert;
  const int32_t* num_blocks;
  const float* topk_weights;
  int k_dim, n_dim, b_rows_per_expert, top_k, max_blocks, split_k, num_pairs;
};
struct DecodeParams {  // sm90_decode_kernel.cuh
  const void* a;
  const void* b;
  void* out;
  const int32_t* topk_ids;
  const float* topk_weights;
  int k_dim, n_dim, b_rows_per_expert, top_k, num_pairs, num_experts;
};
struct CombineParams {
  const void* y;
  void* out;
  int num_tokens, top_k, k_dim, split_k;
};
// sm90_ws_kernel.cuh WsGemmParams: two 64-byte aligned CUtensorMaps, then GemmParams.
struct WsGemmParams {
  CUtensorMap tma_a;
  CUtensorMap tma_b;
  GemmParams g;
};
static_assert(sizeof(CUtensorMap) == 128 && offsetof(WsGemmParams, tma_b) == 128 &&
                  offsetof(WsGemmParams, g) == 256,
              "WsGemmParams must match the device struct (two 128-byte maps, then GemmParams)");

size_t align_up(size_t v) { return (v + 255) / 256 * 256; }

struct WorkspaceLayout {
  size_t sorted_pairs = 0, block_expert = 0, num_blocks = 0, hist = 0, h = 0, y = 0, total = 0;
};

/// split_k: GEMM2's K splits (fp32 partials instead of bf16 y rows).
WorkspaceLayout layout_for(core::MoeProblem const& p, int block_m, int split_k) {
  const int64_t pairs = core::num_pairs(p);
  const int64_t mb = max_blocks(pairs, p.num_experts, block_m);
  WorkspaceLayout w;
  size_t off = 0;
  w.sorted_pairs = off;
  off += align_up(sizeof(int32_t) * mb * block_m);
  w.block_expert = off;
  off += align_up(sizeof(int32_t) * mb);
  w.num_blocks = off;
  off += align_up(sizeof(int32_t));
  w.hist = off;
  off += align_up(sizeof(int32_t) * ((pairs + kAlignChunk - 1) / kAlignChunk) * p.num_experts);
  w.h = off;
  off += align_up(2 * static_cast<size_t>(mb) * block_m * p.intermediate_size);
  w.y = off;
  off += align_up((split_k > 1 ? 4 * static_cast<size_t>(split_k) : 2) * pairs * p.hidden_size);
  w.total = off;
  return w;
}

std::string align_expr(int block_m) {
  return "&moetune_dev::moe_align_kernel<" + std::to_string(block_m) + ">";
}
constexpr const char* kCombineExpr = "&moetune_dev::moe_combine_kernel";

// Launches one kernel, with the programmatic-stream-serialization attribute when PDL is on.
/// cluster_m > 1: CTA clusters of cluster_m x 1 (grid.x a multiple of it).
cudaError_t launch(cudaKernel_t k, dim3 grid, dim3 block, void** params, size_t smem,
                   cudaStream_t stream, bool pdl, int cluster_m = 1) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  if (pdl) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  if (cluster_m > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = static_cast<unsigned>(cluster_m);
    attr[n].val.clusterDim.y = 1;
    attr[n].val.clusterDim.z = 1;
    ++n;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  return cudaLaunchKernelExC(&cfg, reinterpret_cast<const void*>(k), params);
}

std::mutex g_mutex;
std::map<std::string, std::shared_ptr<Sm90GatherKernels const>> g_loaded;
std::map<std::string, cudaLibrary_t> g_libraries;  // module key -> loaded once per process

std::mutex g_attr_mutex;  // cudaFuncAttributeMaxDynamicSharedMemorySize: read, then raise

/// Lets `f` launch with `bytes` of dynamic shared memory. A kernel handle is shared by every config
/// and problem whose module has the same name expressions (g_libraries), and what one needs can
/// differ (the decode GEMM2's top_k x block_n partials: 128 bytes at S2, 32 at S3), so the
/// attribute only ever rises. NOTE: setting it to each loader's own need made a second problem's
/// launch of a shared kernel fail (cudaErrorInvalidValue) on the H200: S3's M = 1 row lowered the
/// decode GEMM2's limit to 32 bytes, then S3's default, served S2's cached 128-byte geometry, asked
/// for 128.
core::Status allow_dynamic_smem(cudaKernel_t f, int bytes) {
  std::lock_guard<std::mutex> lock(g_attr_mutex);
  cudaFuncAttributes attr{};
  MOETUNE_CUDA_CHECK(cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(f)));
  if (attr.maxDynamicSharedSizeBytes >= bytes) return core::Status::Ok();
  MOETUNE_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(f),
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  return core::Status::Ok();
}

/// Every field of a GEMM's geometry, for the cache key.
std::string geometry_key(GemmGeometry const& g) {
  std::string key;
  for (int v : {g.block_m, g.block_n, g.block_k, g.warps_m, g.warps_n, g.stages, g.group_m,
                int(g.gated), g.mma, int(g.pingpong), g.cluster_m, int(g.decode), g.split_k,
                g.decode_smem}) {
    key += std::to_string(v) + ",";
  }
  return key + ";";
}

std::string join_key(std::vector<std::string> const& exprs) {
  std::string key;
  for (auto const& e : exprs) key += e + ";";
  return key;
}

}  // namespace

core::Result<std::vector<std::string>> sm90_gather_name_exprs(core::MoeProblem const& p,
                                                              core::MoeConfig const& c) {
  MOETUNE_RETURN_IF_ERROR(sm90_can_implement(p, c));
  auto g1 = gemm_geometry(p, c.gemm1, true);
  auto g2 = gemm_geometry(p, c.gemm2, false);
  const int act = act_id(p.activation);
  if (g1->decode) {  // the decode kernels route and combine themselves
    return std::vector<std::string>{gemm_name_expr(*g1, act, true),
                                    gemm_name_expr(*g2, act, false)};
  }
  return std::vector<std::string>{
      gemm_name_expr(*g1, act, true),
      gemm_name_expr(*g2, act, false),
      align_expr(g1->block_m),
      kCombineExpr,
      "&moetune_dev::moe_align_count_kernel",
      "&moetune_dev::moe_align_scan_kernel<" + std::to_string(g1->block_m) + ">",
      "&moetune_dev::moe_align_scatter_kernel"};
}

core::Result<std::vector<std::vector<std::string>>> sm90_gather_modules(core::MoeProblem const& p,
                                                                        core::MoeConfig const& c) {
  auto exprs = sm90_gather_name_exprs(p, c);
  if (!exprs.ok()) return exprs.error();
  std::vector<std::vector<std::string>> out = {{(*exprs)[0]}, {(*exprs)[1]}};
  if (exprs->size() > 2) out.emplace_back(exprs->begin() + 2, exprs->end());
  return out;
}

core::Result<std::shared_ptr<Sm90GatherKernels const>> load_sm90_gather(core::MoeProblem const& p,
                                                                        core::MoeConfig const& c) {
  auto modules = sm90_gather_modules(p, c);
  if (!modules.ok()) return modules.error();
  // The cache key is the geometry as well as the names: what a launch uses is not all in the
  // name expressions (split_k's count, the decode GEMM2's top_k x block_n partials in shared
  // memory), so configs and problems that share kernels do not share a launch.
  auto g1 = gemm_geometry(p, c.gemm1, true);
  auto g2 = gemm_geometry(p, c.gemm2, false);
  if (!g1.ok()) return g1.error();
  if (!g2.ok()) return g2.error();
  std::string key = geometry_key(*g1) + geometry_key(*g2);
  for (auto const& m : *modules) key += join_key(m);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (auto it = g_loaded.find(key); it != g_loaded.end()) return it->second;
  }
  auto k = std::make_shared<Sm90GatherKernels>();
  k->g1 = *g1;
  k->g2 = *g2;
  k->from_cache = true;
  // In sm90_gather_name_exprs order (the decode kernels: the first two only).
  cudaKernel_t* slots[] = {&k->gemm1,       &k->gemm2,      &k->align,        &k->combine,
                           &k->align_count, &k->align_scan, &k->align_scatter};
  size_t slot = 0;
  for (auto const& exprs : *modules) {
    auto mod = compile_module(exprs, p.arch.empty() ? "sm_90a" : p.arch);
    if (!mod.ok()) return mod.error();
    k->ptxas_log += mod->ptxas_log;
    k->compile_ms += mod->compile_ms;
    k->from_cache = k->from_cache && mod->from_cache;
    cudaLibrary_t library = nullptr;
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      if (auto it = g_libraries.find(join_key(exprs)); it != g_libraries.end()) {
        library = it->second;
      }
    }
    if (library == nullptr) {
      MOETUNE_CUDA_CHECK(cudaLibraryLoadData(&library, mod->cubin.data(), nullptr, nullptr, 0,
                                             nullptr, nullptr, 0));
      std::lock_guard<std::mutex> lock(g_mutex);
      // A thread that loaded the same module meanwhile keeps its copy; this one serves too.
      g_libraries.emplace(join_key(exprs), library);
    }
    for (auto const& e : exprs) {
      MOETUNE_CUDA_CHECK(cudaLibraryGetKernel(slots[slot++], library, mod->lowered[e].c_str()));
    }
  }
  int device = 0;
  MOETUNE_CUDA_CHECK(cudaGetDevice(&device));
  MOETUNE_CUDA_CHECK(cudaDeviceGetAttribute(&k->sm_count, cudaDevAttrMultiProcessorCount, device));
  if (!k->g1.decode) MOETUNE_RETURN_IF_ERROR(allow_dynamic_smem(k->gemm1, k->g1.smem_bytes()));
  MOETUNE_RETURN_IF_ERROR(allow_dynamic_smem(k->gemm2, k->g2.smem_bytes()));
  // Clustered GEMMs: a persistent grid larger than the co-resident clusters would run its last
  // clusters after the others (a second wave), so the grid is capped at what fits.
  for (auto [f, g, out] :
       {std::tuple{k->gemm1, &k->g1, &k->clusters1}, std::tuple{k->gemm2, &k->g2, &k->clusters2}}) {
    if (g->cluster_m < 2) continue;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(static_cast<unsigned>(g->cluster_m * (k->sm_count / g->cluster_m)));
    cfg.blockDim = dim3(static_cast<unsigned>(g->threads()));
    cfg.dynamicSmemBytes = static_cast<size_t>(g->smem_bytes());
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = static_cast<unsigned>(g->cluster_m);
    attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    MOETUNE_CUDA_CHECK(cudaOccupancyMaxActiveClusters(out, reinterpret_cast<const void*>(f), &cfg));
    if (*out < 1) {
      return core::make_error(core::ErrorCode::kUnsupported, "sm90_gather",
                              "launch.cluster = " + std::to_string(g->cluster_m) +
                                  "x1: no cluster of this kernel fits on the device (" +
                                  std::to_string(g->smem_bytes()) +
                                  " bytes of shared memory per CTA); use cluster 1x1");
    }
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  auto [it, inserted] = g_loaded.emplace(key, k);
  return it->second;
}

size_t sm90_gather_workspace_bytes(core::MoeProblem const& p, core::MoeConfig const& c) {
  return layout_for(p, c.gemm1.tile.block_m, c.gemm2.pipeline.split_k).total;
}

core::Status launch_sm90_gather(Sm90GatherKernels const& k, core::MoeProblem const& p,
                                MoeArgs const& args, void* workspace, size_t workspace_bytes,
                                cudaStream_t stream, unsigned stages, FastPaths const& fast_paths) {
  if (p.num_tokens == 0) return core::Status::Ok();
  const WorkspaceLayout w = layout_for(p, k.g1.block_m, k.g2.split_k);
  if (workspace_bytes < w.total) {
    return core::make_error(core::ErrorCode::kInvalidArgument, "launch_sm90_gather",
                            "workspace of " + std::to_string(workspace_bytes) +
                                " bytes is below the " + std::to_string(w.total) +
                                " this M needs; size it with "
                                "sm90_gather_workspace_bytes");
  }
  char* ws = static_cast<char*>(workspace);
  auto* sorted_pairs = reinterpret_cast<int32_t*>(ws + w.sorted_pairs);
  auto* block_expert = reinterpret_cast<int32_t*>(ws + w.block_expert);
  auto* num_blocks = reinterpret_cast<int32_t*>(ws + w.num_blocks);
  void* h = ws + w.h;
  void* y = ws + w.y;
  const int pairs = static_cast<int>(core::num_pairs(p));
  const int mb = static_cast<int>(max_blocks(pairs, p.num_experts, k.g1.block_m));

  if (k.g1.decode) {  // two launches: GEMM1 routes itself, GEMM2 combines itself
    const int n1 = static_cast<int>(p.intermediate_size), kd = static_cast<int>(p.hidden_size);
    if (stages & kStageGemm1) {
      DecodeParams dp{args.x,
                      args.w1,
                      h,
                      args.topk_ids,
                      args.topk_weights,
                      kd,
                      n1,
                      static_cast<int>(core::gemm1_n(p)),
                      static_cast<int>(p.top_k),
                      pairs,
                      static_cast<int>(p.num_experts)};
      void* params[] = {&dp};
      const dim3 grid(static_cast<unsigned>(pairs),
                      static_cast<unsigned>((n1 + k.g1.block_n - 1) / k.g1.block_n));
      MOETUNE_CUDA_CHECK(
          launch(k.gemm1, grid, dim3(k.g1.threads()), params, 0, stream, fast_paths.pdl));
    }
    if (stages & kStageGemm2) {
      DecodeParams dp{h,
                      args.w2,
                      args.out,
                      args.topk_ids,
                      args.topk_weights,
                      n1,
                      kd,
                      kd,
                      static_cast<int>(p.top_k),
                      pairs,
                      static_cast<int>(p.num_experts)};
      void* params[] = {&dp};
      const dim3 grid(static_cast<unsigned>(p.num_tokens),
                      static_cast<unsigned>((kd + k.g2.block_n - 1) / k.g2.block_n));
      MOETUNE_CUDA_CHECK(launch(k.gemm2, grid, dim3(k.g2.threads()), params,
                                static_cast<size_t>(k.g2.smem_bytes()), stream, fast_paths.pdl));
    }
    return core::Status::Ok();
  }

  if ((stages & kStageAlign) && fast_paths.align_multi_cta && pairs > kSingleCtaAlignPairs) {
    AlignMultiParams mp{{args.topk_ids, sorted_pairs, block_expert, num_blocks, pairs,
                         static_cast<int>(p.num_experts), mb},
                        reinterpret_cast<int32_t*>(ws + w.hist),
                        (pairs + kAlignChunk - 1) / kAlignChunk};
    void* params[] = {&mp};
    const dim3 chunks(static_cast<unsigned>(mp.num_chunks));
    MOETUNE_CUDA_CHECK(launch(k.align_count, chunks, dim3(512), params, 0, stream, fast_paths.pdl));
    MOETUNE_CUDA_CHECK(
        launch(k.align_scan, dim3(1), dim3(1024), params, 0, stream, fast_paths.pdl));
    MOETUNE_CUDA_CHECK(
        launch(k.align_scatter, chunks, dim3(512), params, 0, stream, fast_paths.pdl));
  } else if (stages & kStageAlign) {
    AlignParams ap{args.topk_ids,
                   sorted_pairs,
                   block_expert,
                   num_blocks,
                   pairs,
                   static_cast<int>(p.num_experts),
                   mb};
    void* params[] = {&ap};
    MOETUNE_CUDA_CHECK(launch(k.align, dim3(1), dim3(1024), params, 0, stream, fast_paths.pdl));
  }
  auto gemm = [&](cudaKernel_t f, GemmGeometry const& g, GemmParams gp,
                  uint64_t a_rows) -> core::Status {
    const unsigned n_blocks = static_cast<unsigned>((gp.n_dim + g.block_n - 1) / g.block_n);
    const unsigned tiles = static_cast<unsigned>(mb) * n_blocks * static_cast<unsigned>(g.split_k);
    if (g.persistent()) {
      // TMA maps of this call's pointers: B = the experts' weight rows, A = h rows (GEMM2).
      WsGemmParams wp{};
      wp.g = gp;
      MOETUNE_RETURN_IF_ERROR(encode_tma_2d(
          &wp.tma_b, gp.b, static_cast<uint64_t>(p.num_experts) * gp.b_rows_per_expert,
          static_cast<uint64_t>(gp.k_dim), static_cast<uint32_t>(g.block_n / g.warps_n),
          "weights"));
      if (a_rows > 0) {
        MOETUNE_RETURN_IF_ERROR(encode_tma_2d(&wp.tma_a, gp.a, a_rows,
                                              static_cast<uint64_t>(gp.k_dim),
                                              static_cast<uint32_t>(g.block_m), "h"));
      }
      // cluster_m 2: one cluster per pair of m-blocks' tiles, at most one CTA per SM.
      const unsigned cm = static_cast<unsigned>(g.cluster_m);
      const unsigned units = cm > 1 ? (static_cast<unsigned>(mb) + cm - 1) / cm * n_blocks : tiles;
      const int fit = f == k.gemm1 ? k.clusters1 : k.clusters2;
      const unsigned cap =
          cm > 1 ? std::min(static_cast<unsigned>(k.sm_count) / cm, static_cast<unsigned>(fit))
                 : static_cast<unsigned>(k.sm_count);
      const unsigned grid = cm * std::min(units, cap);
      void* params[] = {&wp};
      MOETUNE_CUDA_CHECK(launch(f, dim3(grid), dim3(g.threads()), params, g.smem_bytes(), stream,
                                fast_paths.pdl, g.cluster_m));
      return core::Status::Ok();
    }
    void* params[] = {&gp};
    MOETUNE_CUDA_CHECK(
        launch(f, dim3(tiles), dim3(g.threads()), params, g.smem_bytes(), stream, fast_paths.pdl));
    return core::Status::Ok();
  };
  if (stages & kStageGemm1) {
    GemmParams gp{args.x,
                  args.w1,
                  h,
                  sorted_pairs,
                  block_expert,
                  num_blocks,
                  args.topk_weights,
                  static_cast<int>(p.hidden_size),
                  static_cast<int>(p.intermediate_size),
                  static_cast<int>(core::gemm1_n(p)),
                  static_cast<int>(p.top_k),
                  mb,
                  1,
                  pairs};
    MOETUNE_RETURN_IF_ERROR(gemm(k.gemm1, k.g1, gp, 0));
  }
  if (stages & kStageGemm2) {
    GemmParams gp{h,
                  args.w2,
                  y,
                  sorted_pairs,
                  block_expert,
                  num_blocks,
                  args.topk_weights,
                  static_cast<int>(p.intermediate_size),
                  static_cast<int>(p.hidden_size),
                  static_cast<int>(p.hidden_size),
                  static_cast<int>(p.top_k),
                  mb,
                  k.g2.split_k,
                  pairs};
    MOETUNE_RETURN_IF_ERROR(gemm(k.gemm2, k.g2, gp, static_cast<uint64_t>(mb) * k.g1.block_m));
  }
  if (stages & kStageCombine) {
    CombineParams cp{y,
                     args.out,
                     static_cast<int>(p.num_tokens),
                     static_cast<int>(p.top_k),
                     static_cast<int>(p.hidden_size),
                     k.g2.split_k};
    const long long threads = p.num_tokens * (p.hidden_size / 8);
    void* params[] = {&cp};
    MOETUNE_CUDA_CHECK(launch(k.combine, dim3(static_cast<unsigned>((threads + 255) / 256)),
                              dim3(256), params, 0, stream, fast_paths.pdl));
  }
  return core::Status::Ok();
}

}  // namespace moetune::kernels::cuda
