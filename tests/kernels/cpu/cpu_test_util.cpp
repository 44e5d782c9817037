// Helpers shared by the cpu kernel tests; see cpu_test_util.hpp.
#include "cpu_test_util.hpp"

#include <cstdlib>

#include "kernels/cpu/reference.hpp"

namespace moetune::kernels::cpu::testing {

uint64_t test_seed() {
  char const* text = std::getenv("MOETUNE_TEST_SEED");
  return text != nullptr ? std::strtoull(text, nullptr, 10) : 20240611u;
}

RunOutput run_cpu(MoeHostData const& data, core::MoeConfig const& config) {
  RunOutput result;
  int64_t const count = data.problem.num_tokens * data.problem.hidden_size;
  result.storage.assign(static_cast<size_t>(count), 0);
  poison_output(data.problem.dtype, result.storage.data(), count);
  CpuMoeArgs args;
  args.x = data.x_data();
  args.topk_ids = data.routing.topk_ids.data();
  args.topk_weights = data.routing.topk_weights.data();
  args.w1 = data.w1_data();
  args.w2 = data.w2_data();
  args.b1 = data.b1_data();
  args.b2 = data.b2_data();
  args.out = result.storage.data();
  CpuMoeWorkspace workspace;
  result.status = run_cpu_moe(data.problem, config, args, workspace);
  return result;
}

CheckResult run_and_check(MoeHostData const& data, std::vector<double> const& ref,
                          core::MoeConfig const& config) {
  RunOutput out = run_cpu(data, config);
  if (!out.status.ok()) {
    CheckResult failed;
    failed.all_written = false;
    failed.digest = "run failed: " + out.status.error().to_string();
    return failed;
  }
  return check_output(data.problem.dtype, out.data(), ref, tolerance_for(data.problem.dtype));
}

std::string describe(core::MoeProblem const& p, core::RoutingProfile const& r, uint64_t seed,
                     core::MoeConfig const& c) {
  return core::to_string(p) + " routing=" + core::format_routing(r) +
         " seed=" + std::to_string(seed) + " config=" + core::to_string(c);
}

std::string describe_bad(MoeHostData const& data, void const* out, std::vector<double> const& ref,
                         CheckResult const& result) {
  if (result.first_bad < 0) {
    return "no bad element";
  }
  int64_t const k = data.problem.hidden_size;
  int64_t const i = result.first_bad;
  return "first bad element " + std::to_string(i) + " (token " + std::to_string(i / k) + ", col " +
         std::to_string(i % k) + "): got " +
         std::to_string(output_value(data.problem.dtype, out, i)) + ", want " +
         std::to_string(ref[static_cast<size_t>(i)]);
}

}  // namespace moetune::kernels::cpu::testing
