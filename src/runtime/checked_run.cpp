// One checked MoeRunner call; see checked_run.hpp. The device half is checked_run_cuda.cpp.
#include "runtime/checked_run.hpp"

#include <string>
#include <vector>

#include "kernels/cpu/moe_data.hpp"
#include "kernels/cpu/output_check.hpp"
#include "kernels/cpu/reference.hpp"

namespace moetune::runtime {

#if defined(MOETUNE_HAVE_CUDA)
/// checked_run_cuda.cpp: copies `data` to the device, runs, copies the output into `out`.
core::Status run_on_device(MoeRunner& runner, kernels::cpu::MoeHostData const& data,
                           Knobs const& knobs, std::vector<unsigned char>& out, Choice* chosen);
#endif

core::Result<CheckedRun> run_checked(MoeRunner& runner, core::RoutingProfile const& routing,
                                     int64_t m, Knobs const& knobs, uint64_t seed) {
  core::MoeProblem p = runner.problem();
  p.num_tokens = m;
  if (p.quant != core::Quant::kNone) {
    return core::make_error(core::ErrorCode::kUnsupported, "run_checked",
                            "quant " + std::string(core::to_string(p.quant)) +
                                ": the checked run generates no fp8 weights or scales yet; run fp8 "
                                "layers through the torch op (moetune.fused_moe with w1_scale / "
                                "w2_scale) or bench/fp8_bench.py");
  }
  auto data = kernels::cpu::generate_moe_data(p, routing, seed);
  if (!data.ok()) return data.error();
  std::vector<unsigned char> out(static_cast<size_t>(m * p.hidden_size) *
                                 core::dtype_bytes(p.dtype));
  kernels::cpu::poison_output(p.dtype, out.data(), m * p.hidden_size);
  CheckedRun r;
  if (runner.backend_name() == "cpu") {
    r.executed_by = "runner (host buffers)";
    MOETUNE_RETURN_IF_ERROR(runner.run(RunArgs{.stream = nullptr,
                                               .x = data->x_data(),
                                               .topk_ids = data->routing.topk_ids.data(),
                                               .topk_weights = data->routing.topk_weights.data(),
                                               .w1 = data->w1_data(),
                                               .w2 = data->w2_data(),
                                               .out = out.data(),
                                               .m = m,
                                               .b1 = data->b1_data(),
                                               .b2 = data->b2_data()},
                                       knobs, &r.choice));
  } else {
#if defined(MOETUNE_HAVE_CUDA)
    r.executed_by = "runner (device buffers, stream)";
    MOETUNE_RETURN_IF_ERROR(run_on_device(runner, *data, knobs, out, &r.choice));
#else
    return core::make_error(core::ErrorCode::kUnsupported, "run_checked",
                            "backend '" + runner.backend_name() + "' needs a build with CUDA");
#endif
  }
  if (m == 0) {
    r.passed = true;
    return r;
  }
  auto ref = kernels::cpu::reference_moe(p, data->view());
  if (!ref.ok()) return ref.error();
  kernels::Tolerance const tol = kernels::tolerance_for(p);
  r.check = kernels::cpu::check_output(p.dtype, out.data(), *ref, tol);
  r.passed = kernels::cpu::check_passed(r.check, tol);
  return r;
}

}  // namespace moetune::runtime
