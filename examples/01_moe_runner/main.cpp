// 01_moe_runner: serve a fused-MoE layer from an engine with MoeRunner.
//
// Why: an inference engine calls the MoE layer thousands of times per second with a different
// token count M each time. It must not compile, tune, allocate or parse JSON on that path, and it
// must be able to say afterwards which config served a call and why. MoeRunner does the slow work
// once (load the matching table, the knob cache, size the workspace, load kernels) and then
// answers each call with one atomic load: knobs none = cache entry -> table row -> default;
// explicit = your config, validated; auto = tune this bucket once (outside graph capture) and
// persist the winner. Copy this file into an engine: build the runner at model load, call run()
// in forward(). It checks its own output against the fp64 reference and exits non-zero if wrong.
//
// Run: build/examples/01_moe_runner/example_01_moe_runner [--backend cpu|cuda] [--tables DIR]
//      (defaults: cpu, tables/cpu of this checkout; the cache goes to a temp file).
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "kernels/cpu/moe_data.hpp"  // generated inputs: stands in for the engine's tensors
#include "kernels/cpu/output_check.hpp"
#include "kernels/cpu/reference.hpp"  // fp64 reference: the self-check
#include "kernels/testbed.hpp"
#include "moetune/moe_runner.hpp"
#if defined(MOETUNE_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace {

using moetune::Choice;
using moetune::Knobs;
namespace core = moetune::core;
namespace cpu = moetune::kernels::cpu;

/// Device copies of one call's tensors (cuda), or the host data itself (cpu).
struct Buffers {
  void const* x;
  int32_t const* ids;
  float const* weights;
  void const* w1;
  void const* w2;
  void* out;
  std::vector<void*> owned;
};

Buffers upload(cpu::MoeHostData const& d, std::vector<unsigned char>& host_out, bool cuda) {
  Buffers b{d.x_data(),
            d.routing.topk_ids.data(),
            d.routing.topk_weights.data(),
            d.w1_data(),
            d.w2_data(),
            host_out.data(),
            {}};
#if defined(MOETUNE_HAVE_CUDA)
  if (cuda) {
    auto copy = [&](void const* src, size_t bytes) -> void* {
      void* dst = nullptr;
      cudaMalloc(&dst, bytes == 0 ? 1 : bytes);
      cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
      b.owned.push_back(dst);
      return dst;
    };
    core::MoeProblem const& p = d.problem;
    size_t const eb = core::dtype_bytes(p.dtype);
    size_t const pairs = d.routing.topk_ids.size();
    b.x = copy(b.x, p.num_tokens * p.hidden_size * eb);
    b.ids = static_cast<int32_t const*>(copy(b.ids, pairs * 4));
    b.weights = static_cast<float const*>(copy(b.weights, pairs * 4));
    b.w1 = copy(b.w1, p.num_experts * core::gemm1_n(p) * p.hidden_size * eb);
    b.w2 = copy(b.w2, p.num_experts * p.hidden_size * p.intermediate_size * eb);
    b.out = copy(host_out.data(), host_out.size());
  }
#else
  (void)cuda;
#endif
  return b;
}

/// One forward() call of the engine: run the layer, then (example only) check it.
bool forward_and_check(moetune::MoeRunner& runner, int64_t m, Knobs const& knobs, bool cuda) {
  core::MoeProblem p = runner.problem();
  p.num_tokens = m;
  auto data = cpu::generate_moe_data(p, {}, 42 + m);
  if (!data.ok()) return false;
  std::vector<unsigned char> out(static_cast<size_t>(m * p.hidden_size) *
                                 core::dtype_bytes(p.dtype));
  Buffers b = upload(*data, out, cuda);
  Choice chosen;
  // The serving call: the stream is a cudaStream_t on cuda (nullptr = default), unused on cpu.
  core::Status s = runner.run(nullptr, b.x, b.ids, b.weights, b.w1, b.w2, b.out, m, knobs, &chosen);
#if defined(MOETUNE_HAVE_CUDA)
  if (cuda) {
    cudaMemcpy(out.data(), b.out, out.size(), cudaMemcpyDeviceToHost);
    for (void* ptr : b.owned) cudaFree(ptr);
  }
#endif
  if (!s.ok()) {
    std::printf("M=%lld: %s\n", static_cast<long long>(m), s.error().to_string().c_str());
    return false;
  }
  auto ref = cpu::reference_moe(p, data->view());
  auto tol = moetune::kernels::tolerance_for(p.dtype);
  auto chk = cpu::check_output(p.dtype, out.data(), *ref, tol);
  bool const ok = cpu::check_passed(chk, tol);
  std::printf("M=%-4lld %-8s %-22s rel_l2=%.2e %s\n    %s\n", static_cast<long long>(m),
              moetune::to_string(chosen.rule), core::short_string(chosen.config).c_str(),
              chk.rel_l2_error, ok ? "ok" : "WRONG", chosen.explain.c_str());
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "cpu";
  std::string tables = std::string(MOETUNE_SOURCE_DIR) + "/tables/cpu";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--backend")) backend = argv[i + 1];
    if (!std::strcmp(argv[i], "--tables")) tables = argv[i + 1];
  }
  // 1. At model load: the layer's shape (no M), the backend and the options.
  auto problem = core::parse_problem_spec("E=8,K=256,I=128,topk=2,act=silu,dtype=bf16");
  moetune::RunnerOptions options;
  options.tables_dir = tables;
  options.cache_path = (std::filesystem::temp_directory_path() /
                        ("moetune-example-01-" + std::to_string(getpid()) + ".json"))
                           .string();
  std::filesystem::remove(options.cache_path);  // start from an empty cache: the demo shows auto
  options.max_tokens = 512;                     // workspace sized once for the largest batch
  options.auto_budget_s = 5;
  auto runner = moetune::MoeRunner::create(*problem, backend, options);
  if (!runner.ok()) {
    std::printf("cannot build the runner: %s\n", runner.error().to_string().c_str());
    return 2;
  }
  // The fast paths (levers) are fixed now: MOETUNE_LEVER_<NAME>=on|off in the environment, or
  // options.levers.fast_paths, decide them once; every call of this runner takes them.
  std::printf("fast paths: %s (from %s)\n",
              moetune::on_names((*runner)->levers().fast_paths).c_str(),
              (*runner)->levers().origin.c_str());
  bool const cuda = backend == "cuda";
  bool ok = true;
  // 2. In forward(): knobs none for every batch size the engine sees (table row or default).
  for (int64_t m : {1, 3, 16, 100, 512}) ok &= forward_and_check(**runner, m, Knobs::none(), cuda);
  // 3. Once, outside graph capture: knobs auto tunes bucket 8 and persists it; later calls in
  //    that bucket, with knobs none or auto, come from the cache.
  ok &= forward_and_check(**runner, 6, Knobs::auto_tune(), cuda);
  ok &= forward_and_check(**runner, 7, Knobs::none(), cuda);
  // 4. During graph capture, auto is refused unless the cache already holds the bucket.
  {
    moetune::ScopedCapture capture(**runner);
    auto refused = (*runner)->choose(40, Knobs::auto_tune());
    std::printf("capturing, M=40 auto: %s\n",
                refused.ok() ? "served (unexpected)" : refused.error().message.c_str());
    ok &= !refused.ok();
  }
  std::filesystem::remove(options.cache_path);
  std::printf("%s\n", ok ? "example 01: all checks passed" : "example 01: FAILED");
  return ok ? 0 : 1;
}
