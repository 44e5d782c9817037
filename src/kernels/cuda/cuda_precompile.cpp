// precompile_sm90_gather: the cuda worker's parallel precompile (see cuda_testbed.hpp). Each
// distinct module of a round's configs (sm90_gather_modules: a GEMM's module is shared by every
// config naming that kernel) is compiled once, on a pool of threads, into the cubin cache;
// compile_module is thread-safe (independent NVRTC programs, cache writes serialised in jit.cpp).
// No CUDA call is made here, so no context is shared between threads.
#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_testbed.hpp"
#include "kernels/cuda/jit.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"
#include "kernels/cuda/sm90_gather_launch.hpp"

namespace moetune::kernels::cuda {

std::vector<core::Status> precompile_sm90_gather(core::MoeProblem const& problem,
                                                 std::vector<core::MoeConfig> const& configs,
                                                 FastPaths const& fast_paths, unsigned threads) {
  std::vector<core::Status> out(configs.size());
  std::vector<std::vector<std::string>> modules;  // distinct modules of the round, in order
  std::vector<core::Status> module_status;
  std::map<std::string, size_t> index;                    // module key -> its place in `modules`
  std::vector<std::vector<size_t>> uses(configs.size());  // config -> its modules
  for (size_t i = 0; i < configs.size(); ++i) {
    out[i] = sm90_can_implement(problem, configs[i], fast_paths);
    if (!out[i].ok()) continue;
    auto m = sm90_gather_modules(problem, configs[i]);
    if (!m.ok()) {
      out[i] = m.error();
      continue;
    }
    for (auto& exprs : *m) {
      std::string key;
      for (auto const& x : exprs) key += x + ";";
      auto [it, fresh] = index.emplace(key, modules.size());
      if (fresh) modules.push_back(std::move(exprs));
      uses[i].push_back(it->second);
    }
  }
  module_status.resize(modules.size());
  const std::string arch = problem.arch.empty() ? "sm_90a" : problem.arch;  // as load_sm90_gather
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k = next.fetch_add(1); k < modules.size(); k = next.fetch_add(1)) {
      try {
        auto m = compile_module(modules[k], arch);
        if (!m.ok()) module_status[k] = m.error();
      } catch (std::exception const& e) {
        module_status[k] = core::make_error(core::ErrorCode::kInternal, "jit",
                                            std::string("NVRTC compile threw: ") + e.what());
      }
    }
  };
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min<size_t>(modules.size(), threads); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (size_t i = 0; i < configs.size(); ++i) {  // a config fails with its first failing module
    for (size_t k : uses[i]) {
      if (!module_status[k].ok()) {
        out[i] = module_status[k];
        break;
      }
    }
  }
  return out;
}

}  // namespace moetune::kernels::cuda
