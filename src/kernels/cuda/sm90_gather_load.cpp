// Loading the sm90_gather kernels of one config: NVRTC modules (one per GEMM kernel, one for align
// and combine), each loaded once per process and shared by every config that names the same
// kernels; the loaded set cached per geometry. See sm90_gather_load.hpp.
#include "kernels/cuda/sm90_gather_load.hpp"

#include <map>
#include <mutex>
#include <tuple>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/jit.hpp"
#include "kernels/cuda/sm90_decode_geometry.hpp"
#include "kernels/cuda/sm90_fp8_geometry.hpp"

namespace moetune::kernels::cuda {
namespace {

/// The align kernels' template arguments: align's block_m, and GEMM1's when it walks the blocks in
/// smaller tiles (then align also lists GEMM1's sub-blocks).
std::string align_args(int block_m, int sub_m) {
  return std::to_string(block_m) + (sub_m < block_m ? "," + std::to_string(sub_m) : "") + ">";
}
std::string align_expr(int block_m, int sub_m) {
  return "&moetune_dev::moe_align_kernel<" + align_args(block_m, sub_m);
}
constexpr const char* kCombineExpr = "&moetune_dev::moe_combine_kernel";

std::mutex g_mutex;
std::map<std::string, std::shared_ptr<Sm90GatherKernels const>> g_loaded;
std::map<std::string, cudaLibrary_t> g_libraries;  // module key -> loaded once per process

std::mutex g_attr_mutex;
std::map<cudaKernel_t, int> g_smem_limit;  // the MaxDynamicSharedMemorySize set on each kernel

/// Lets `f` launch with `bytes` of dynamic shared memory. A kernel handle is shared by every config
/// and problem whose module has the same name expressions (g_libraries), and what one needs can
/// differ (the decode GEMM2's top_k x block_n partials: 128 bytes at S2, 32 at S3), so the limit is
/// set at a kernel's first load and after that only ever rises. NOTE: setting it to each loader's
/// own need made a second problem's launch of a shared kernel fail (cudaErrorInvalidValue) on the
/// H200: S3's M = 1 row lowered the decode GEMM2's limit to 32 bytes, then S3's default, served
/// S2's cached 128-byte geometry, asked for 128. NOTE: skipping the attribute up to 48 KB of
/// dynamic memory failed the same way on the device: the 48 KB without opt-in include the kernel's
/// static shared memory, so a mma.sync config with exactly 48 KB of stages (m32n64k64, 4 stages)
/// could not launch.
core::Status allow_dynamic_smem(cudaKernel_t f, int bytes) {
  std::lock_guard<std::mutex> lock(g_attr_mutex);
  auto it = g_smem_limit.find(f);
  if (it != g_smem_limit.end() && bytes <= it->second) return core::Status::Ok();
  MOETUNE_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(f),
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  g_smem_limit[f] = bytes;
  return core::Status::Ok();
}

/// The dynamic shared memory both GEMMs launch with (the bf16 decode GEMM1 takes none).
core::Status allow_gemm_smem(Sm90GatherKernels const& k) {
  if (!k.g1.decode || k.g1.fp8) {
    MOETUNE_RETURN_IF_ERROR(allow_dynamic_smem(k.gemm1, k.g1.smem_bytes()));
  }
  return allow_dynamic_smem(k.gemm2, k.g2.smem_bytes());
}

/// Every field of a GEMM's geometry, for the cache key.
std::string geometry_key(GemmGeometry const& g) {
  std::string key;
  for (int v : {g.block_m, g.block_n, g.block_k, g.warps_m, g.warps_n, g.stages, g.group_m,
                int(g.gated), g.mma, int(g.pingpong), g.cluster_m, g.cluster_n, int(g.decode),
                int(g.swap), g.split_k, g.decode_smem, g.fp8}) {
    key += std::to_string(v) + ",";
  }
  return key + ";";
}

/// Clustered GEMMs: a persistent grid larger than the co-resident clusters would run its last
/// clusters after the others (a second wave), so the grid is capped at what fits (clusters1/2).
core::Status cap_clusters(Sm90GatherKernels& k) {
  for (auto [f, g, out] :
       {std::tuple{k.gemm1, &k.g1, &k.clusters1}, std::tuple{k.gemm2, &k.g2, &k.clusters2}}) {
    const int cs = g->cluster_size();
    if (cs < 2) continue;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(static_cast<unsigned>(cs * (k.sm_count / cs)));
    cfg.blockDim = dim3(static_cast<unsigned>(g->threads()));
    cfg.dynamicSmemBytes = static_cast<size_t>(g->smem_bytes());
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = static_cast<unsigned>(cs);
    attr.val.clusterDim.y = attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    MOETUNE_CUDA_CHECK(cudaOccupancyMaxActiveClusters(out, reinterpret_cast<const void*>(f), &cfg));
    if (*out < 1) {
      return core::make_error(
          core::ErrorCode::kUnsupported, "sm90_gather",
          "launch.cluster = " + std::to_string(g->cluster_m) + "x" + std::to_string(g->cluster_n) +
              ": no cluster of this kernel fits on the device (" + std::to_string(g->smem_bytes()) +
              " bytes of shared memory per CTA); use cluster 1x1");
    }
  }
  return core::Status::Ok();
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
  // GEMM1 adds b1 where it is compiled with the bias bit; GEMM2's b2 is a launch argument.
  const int act = act_id(p.activation) | (p.has_bias ? kActBiasBit : 0);
  if (g1->decode) {  // the decode kernels route and combine themselves
    return std::vector<std::string>{gemm_name_expr(*g1, act, true),
                                    gemm_name_expr(*g2, act, false)};
  }
  std::vector<std::string> exprs{
      gemm_name_expr(*g1, act, true),
      gemm_name_expr(*g2, act, false),
      align_expr(align_block_m(*g1, *g2), g1->block_m),
      kCombineExpr,
      "&moetune_dev::moe_align_count_kernel",
      "&moetune_dev::moe_align_place_kernel<" + align_args(align_block_m(*g1, *g2), g1->block_m),
      "&moetune_dev::moe_permute_rows_kernel"};
  if (p.quant != core::Quant::kNone) exprs.push_back(fp8_quant_name_expr(p.quant));
  return exprs;
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
  // In sm90_gather_name_exprs order (the decode kernels: GEMM1 and GEMM2).
  cudaKernel_t* slots[] = {&k->gemm1,       &k->gemm2,       &k->align,   &k->combine,
                           &k->align_count, &k->align_place, &k->permute, &k->quant};
  cudaKernel_t* decode_slots[] = {&k->gemm1, &k->gemm2};
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
      cudaKernel_t* dst = k->g1.decode ? decode_slots[slot++] : slots[slot++];
      MOETUNE_CUDA_CHECK(cudaLibraryGetKernel(dst, library, mod->lowered[e].c_str()));
    }
  }
  int device = 0;
  MOETUNE_CUDA_CHECK(cudaGetDevice(&device));
  MOETUNE_CUDA_CHECK(cudaDeviceGetAttribute(&k->sm_count, cudaDevAttrMultiProcessorCount, device));
  MOETUNE_RETURN_IF_ERROR(allow_gemm_smem(*k));
  MOETUNE_RETURN_IF_ERROR(cap_clusters(*k));
  std::lock_guard<std::mutex> lock(g_mutex);
  auto [it, inserted] = g_loaded.emplace(key, k);
  return it->second;
}

}  // namespace moetune::kernels::cuda
