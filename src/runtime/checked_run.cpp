// One checked MoeRunner call; see checked_run.hpp. The device half is checked_run_cuda.cpp.
#include "runtime/checked_run.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/fp8_layer.hpp"
#include "kernels/cpu/moe_data.hpp"
#include "kernels/cpu/output_check.hpp"
#include "kernels/cpu/reference.hpp"

namespace moetune::runtime {

#if defined(MOETUNE_HAVE_CUDA)
/// checked_run_cuda.cpp: copies `data` (and `fp8`'s weights and scales when the problem has a
/// quant) to the device, runs, copies the output into `out`.
core::Status run_on_device(MoeRunner& runner, kernels::cpu::MoeHostData const& data,
                           kernels::cpu::Fp8HostLayer const* fp8, Knobs const& knobs,
                           std::vector<unsigned char>& out, Choice* chosen);
#endif

namespace {

core::Status run_on_host(MoeRunner& runner, kernels::cpu::MoeHostData const& data,
                         kernels::cpu::Fp8HostLayer const* fp8, Knobs const& knobs,
                         std::vector<unsigned char>& out, Choice* chosen) {
  bool const tensor = data.problem.quant == core::Quant::kFp8Tensor;
  return runner.run(RunArgs{.stream = nullptr,
                            .x = data.x_data(),
                            .topk_ids = data.routing.topk_ids.data(),
                            .topk_weights = data.routing.topk_weights.data(),
                            .w1 = fp8 != nullptr ? fp8->w1.data() : data.w1_data(),
                            .w2 = fp8 != nullptr ? fp8->w2.data() : data.w2_data(),
                            .out = out.data(),
                            .m = data.problem.num_tokens,
                            .b1 = data.b1_data(),
                            .b2 = data.b2_data(),
                            .w1_scale = fp8 != nullptr ? fp8->w1_scale.data() : nullptr,
                            .w2_scale = fp8 != nullptr ? fp8->w2_scale.data() : nullptr,
                            .a1_scale = fp8 != nullptr && tensor ? &fp8->a1_scale : nullptr,
                            .a2_scale = fp8 != nullptr && tensor ? &fp8->a2_scale : nullptr},
                    knobs, chosen);
}

/// The fp64 reference of the run: reference_moe, or for fp8 reference_fp8_moe on `fp8`.
core::Result<std::vector<double>> reference_of(kernels::cpu::MoeHostData const& data,
                                               kernels::cpu::Fp8HostLayer const* fp8) {
  if (fp8 == nullptr) return kernels::cpu::reference_moe(data.problem, data.view());
  return kernels::cpu::reference_fp8_moe(data.problem, *fp8, data.x, data.routing.topk_ids,
                                         data.routing.topk_weights, data.b1, data.b2);
}

}  // namespace

core::Result<CheckedRun> run_checked(MoeRunner& runner, core::RoutingProfile const& routing,
                                     int64_t m, Knobs const& knobs, uint64_t seed) {
  core::MoeProblem p = runner.problem();
  p.num_tokens = m;
  auto data = kernels::cpu::generate_moe_data(p, routing, seed);
  if (!data.ok()) return data.error();
  std::optional<kernels::cpu::Fp8HostLayer> fp8;
  if (p.quant != core::Quant::kNone) {
    auto layer = kernels::cpu::generate_fp8_layer(p, seed ^ kernels::cpu::kFp8LayerStream);
    if (!layer.ok()) return layer.error();
    fp8 = std::move(layer).value();
  }
  std::vector<unsigned char> out(static_cast<size_t>(m * p.hidden_size) *
                                 core::dtype_bytes(p.dtype));
  kernels::cpu::poison_output(p.dtype, out.data(), m * p.hidden_size);
  CheckedRun r;
  if (runner.backend_name() == "cpu") {
    r.executed_by = "runner (host buffers)";
    MOETUNE_RETURN_IF_ERROR(
        run_on_host(runner, *data, fp8 ? &*fp8 : nullptr, knobs, out, &r.choice));
  } else {
#if defined(MOETUNE_HAVE_CUDA)
    r.executed_by = "runner (device buffers, stream)";
    MOETUNE_RETURN_IF_ERROR(
        run_on_device(runner, *data, fp8 ? &*fp8 : nullptr, knobs, out, &r.choice));
#else
    return core::make_error(core::ErrorCode::kUnsupported, "run_checked",
                            "backend '" + runner.backend_name() + "' needs a build with CUDA");
#endif
  }
  if (m == 0) {
    r.passed = true;
    return r;
  }
  auto ref = reference_of(*data, fp8 ? &*fp8 : nullptr);
  if (!ref.ok()) return ref.error();
  kernels::Tolerance const tol = kernels::tolerance_for(p);
  r.check = kernels::cpu::check_output(p.dtype, out.data(), *ref, tol);
  r.passed = kernels::cpu::check_passed(r.check, tol);
  return r;
}

}  // namespace moetune::runtime
