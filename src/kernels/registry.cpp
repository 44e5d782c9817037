// Backend and testbed registry: "cpu" always, "cuda" when built with nvcc (MOETUNE_HAVE_CUDA),
// "triton" (vLLM's Triton kernel: config logic here, its testbed a Python worker) always.
#include <memory>
#include <string>
#include <vector>

#include "core/names.hpp"
#include "kernels/cpu/cpu_backend.hpp"
#include "kernels/cpu/cpu_testbed.hpp"
#include "kernels/testbed.hpp"
#include "kernels/triton/triton_vllm_backend.hpp"
#if defined(MOETUNE_HAVE_CUDA)
#include "kernels/cuda_factory.hpp"
#endif

namespace moetune::kernels {
namespace {

constexpr char kWhere[] = "backend registry";

core::Error unknown_backend(std::string_view name) {
  std::vector<std::string> const known = {"cpu", "cuda", "triton"};
  return core::make_error(core::ErrorCode::kInvalidArgument, kWhere,
                          "unknown backend '" + std::string(name) + "' (known: cpu, cuda, triton)" +
                              core::did_you_mean(name, known));
}

#if !defined(MOETUNE_HAVE_CUDA)
core::Error cuda_not_built() {
  return core::make_error(core::ErrorCode::kUnsupported, kWhere,
                          "backend 'cuda' is not built into this moetune (configured without "
                          "nvcc); use --backend cpu or rebuild with nvcc on PATH");
}
#endif

}  // namespace

core::Result<std::unique_ptr<core::Backend>> make_backend(std::string_view name) {
  if (name == "cpu") {
    return std::unique_ptr<core::Backend>(std::make_unique<cpu::CpuBackend>());
  }
  if (name == "triton") {
    return std::unique_ptr<core::Backend>(std::make_unique<triton::TritonVllmBackend>());
  }
  if (name == "cuda") {
#if defined(MOETUNE_HAVE_CUDA)
    return make_cuda_backend();
#else
    return cuda_not_built();
#endif
  }
  return unknown_backend(name);
}

core::Result<std::unique_ptr<Testbed>> make_testbed(std::string_view name) {
  if (name == "cpu") {
    return std::unique_ptr<Testbed>(std::make_unique<cpu::CpuTestbed>());
  }
  if (name == "triton") {
    return core::make_error(core::ErrorCode::kUnsupported, kWhere,
                            "backend 'triton' runs in a Python worker "
                            "(python -m moetune.tuner.triton_worker, started by `moetune worker "
                            "--backend triton`), not in this process; tune it with `moetune tune`");
  }
  if (name == "cuda") {
#if defined(MOETUNE_HAVE_CUDA)
    return make_cuda_testbed();
#else
    return cuda_not_built();
#endif
  }
  return unknown_backend(name);
}

std::string default_backend_name() {
#if defined(MOETUNE_HAVE_CUDA)
  if (cuda_device_present()) {
    return "cuda";
  }
#endif
  return "cpu";
}

}  // namespace moetune::kernels
