// precompile_sm90_gather: the cuda worker's parallel precompile (see cuda_testbed.hpp). Each
// distinct module of a round's configs is compiled once, on a pool of threads, into the cubin
// cache; compile_module is thread-safe (independent NVRTC programs, cache writes serialised in
// jit.cpp). No CUDA call is made here, so no context is shared between threads.
#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <thread>
#include <utility>

#include "kernels/cuda/cuda_testbed.hpp"
#include "kernels/cuda/jit.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"
#include "kernels/cuda/sm90_gather_launch.hpp"

namespace moetune::kernels::cuda {

std::vector<core::Status> precompile_sm90_gather(core::MoeProblem const& problem,
                                                 std::vector<core::MoeConfig> const& configs,
                                                 FastPaths const& fast_paths, unsigned threads) {
  std::vector<core::Status> out(configs.size());
  std::vector<std::vector<std::string>> exprs(configs.size());
  std::vector<size_t> todo;                     // configs whose module is compiled here
  std::map<std::string, size_t> first;          // module key -> the config that compiles it
  std::vector<std::pair<size_t, size_t>> same;  // (config, config with the same module)
  for (size_t i = 0; i < configs.size(); ++i) {
    out[i] = sm90_can_implement(problem, configs[i], fast_paths);
    if (!out[i].ok()) continue;
    auto e = sm90_gather_name_exprs(problem, configs[i]);
    if (!e.ok()) {
      out[i] = e.error();
      continue;
    }
    std::string key;
    for (auto const& x : *e) key += x + ";";
    auto [it, fresh] = first.emplace(key, i);
    if (fresh) {
      exprs[i] = std::move(e).value();
      todo.push_back(i);
    } else {
      same.push_back({i, it->second});
    }
  }
  const std::string arch = problem.arch.empty() ? "sm_90a" : problem.arch;  // as load_sm90_gather
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k = next.fetch_add(1); k < todo.size(); k = next.fetch_add(1)) {
      const size_t i = todo[k];
      try {
        auto m = compile_module(exprs[i], arch);
        if (!m.ok()) out[i] = m.error();
      } catch (std::exception const& e) {
        out[i] = core::make_error(core::ErrorCode::kInternal, "jit",
                                  std::string("NVRTC compile threw: ") + e.what());
      }
    }
  };
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < std::min<size_t>(todo.size(), threads); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (auto [i, j] : same) out[i] = out[j];
  return out;
}

}  // namespace moetune::kernels::cuda
