// prewarm's cuda step: compile a config's sm90_gather kernels with NVRTC into the cubin cache (or
// find them there). Needs no GPU. Compiled only with MOETUNE_HAVE_CUDA.
#if defined(MOETUNE_HAVE_CUDA)

#include "core/config.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/jit.hpp"
#include "kernels/cuda/sm90_gather_launch.hpp"
#include "runtime/bundle.hpp"

namespace moetune::runtime {

core::Status prewarm_cuda_config(core::MoeProblem const& p, core::MoeConfig const& c,
                                 PrewarmItem& item) {
  kernels::cuda::CudaBackend const backend{core::DeviceInfo{}};
  MOETUNE_RETURN_IF_ERROR(backend.can_implement(p, c));
  auto modules = kernels::cuda::sm90_gather_modules(p, c);
  if (!modules.ok()) return modules.error();
  bool cached = true;
  for (auto const& exprs : *modules) {
    auto module = kernels::cuda::compile_module(exprs, p.arch);
    if (!module.ok()) return module.error();
    cached = cached && module->from_cache;
    item.cubins.push_back(module->cache_path);
    item.compile_ms += module->compile_ms;
  }
  item.outcome = cached ? "cached" : "compiled";
  return core::Status::Ok();
}

core::MoeConfig cuda_default_config(core::MoeProblem const& p) {
  return kernels::cuda::CudaBackend{core::DeviceInfo{}}.default_config(p);
}

}  // namespace moetune::runtime

#endif  // MOETUNE_HAVE_CUDA
