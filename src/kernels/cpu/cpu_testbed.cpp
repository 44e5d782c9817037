// CpuTestbed; see cpu_testbed.hpp.
#include "kernels/cpu/cpu_testbed.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>

#include "kernels/cpu/bf16.hpp"
#include "kernels/cpu/output_check.hpp"

namespace moetune::kernels::cpu {

core::Status CpuTestbed::prepare(core::MoeProblem const& problem,
                                 core::RoutingProfile const& routing, uint64_t seed) {
  data_.reset();
  fp8_.reset();
  reference_.reset();
  auto data = generate_moe_data(problem, routing, seed);
  if (!data.ok()) {
    return data.error();
  }
  if (problem.quant != core::Quant::kNone) {
    auto layer = generate_fp8_layer(problem, seed ^ kFp8LayerStream);
    if (!layer.ok()) return layer.error();
    fp8_ = std::move(layer).value();
  }
  data_ = std::move(data).value();
  size_t const count = static_cast<size_t>(problem.num_tokens * problem.hidden_size);
  if (problem.dtype == core::DType::kBf16) {
    out_bf16_.assign(count, 0);
  } else {
    out_fp32_.assign(count, 0.0f);
  }
  return core::Status::Ok();
}

core::Result<std::span<double const>> CpuTestbed::reference() {
  if (!data_) {
    return core::make_error(core::ErrorCode::kInvalidArgument, "cpu testbed",
                            "reference() before prepare(); call prepare(problem, routing, seed) "
                            "first");
  }
  if (!reference_) {
    MoeHostData const& d = *data_;
    auto ref = fp8_ ? reference_fp8_moe(d.problem, *fp8_, d.x, d.routing.topk_ids,
                                        d.routing.topk_weights, d.b1, d.b2)
                    : reference_moe(d.problem, d.view());
    if (!ref.ok()) {
      return ref.error();
    }
    reference_ = std::move(ref).value();
  }
  return std::span<double const>(*reference_);
}

void const* CpuTestbed::output() const {
  bool const bf16 = data_ && data_->problem.dtype == core::DType::kBf16;
  return bf16 ? static_cast<void const*>(out_bf16_.data()) : out_fp32_.data();
}

core::Status CpuTestbed::ready(core::MoeConfig const& config, char const* where) const {
  if (!data_) {
    return core::make_error(
        core::ErrorCode::kInvalidArgument, "cpu testbed",
        std::string(where) + " before prepare(); call prepare(problem, " + "routing, seed) first");
  }
  return backend_.can_implement(data_->problem, config);
}

core::Status CpuTestbed::run_once(core::MoeConfig const& config) {
  CpuMoeArgs args;
  args.x = data_->x_data();
  args.topk_ids = data_->routing.topk_ids.data();
  args.topk_weights = data_->routing.topk_weights.data();
  args.w1 = fp8_ ? static_cast<void const*>(fp8_->w1.data()) : data_->w1_data();
  args.w2 = fp8_ ? static_cast<void const*>(fp8_->w2.data()) : data_->w2_data();
  args.b1 = data_->b1_data();
  args.b2 = data_->b2_data();
  if (fp8_) {
    args.w1_scale = fp8_->w1_scale.data();
    args.w2_scale = fp8_->w2_scale.data();
    args.a1_scale = &fp8_->a1_scale;
    args.a2_scale = &fp8_->a2_scale;
  }
  args.out = const_cast<void*>(output());
  return run_cpu_moe(data_->problem, config, args, workspace_, fast_paths_);
}

core::Result<CheckResult> CpuTestbed::check(core::MoeConfig const& config) {
  MOETUNE_RETURN_IF_ERROR(ready(config, "check()"));
  auto ref = reference();
  if (!ref.ok()) {
    return ref.error();
  }
  core::DType const dtype = data_->problem.dtype;
  poison_output(dtype, const_cast<void*>(output()), static_cast<int64_t>(ref->size()));
  MOETUNE_RETURN_IF_ERROR(run_once(config));
  OutputFault const fault = std::exchange(output_fault_, OutputFault::kNone);
  if (fault != OutputFault::kNone && !ref->empty()) {
    // Test-only (--inject-fault wrong / nan): the real output is corrupted, so the check below
    // (not the worker) is what must catch it.
    float const value = fault == OutputFault::kNan ? std::nanf("") : kWrongOutputValue;
    if (dtype == core::DType::kBf16) {
      out_bf16_[0] = float_to_bf16_bits(value);
    } else {
      out_fp32_[0] = value;
    }
  }
  return check_output(dtype, output(), *ref, tolerance_for(data_->problem));
}

core::Result<TimingResult> CpuTestbed::time(core::MoeConfig const& config, int warmup, int reps) {
  MOETUNE_RETURN_IF_ERROR(ready(config, "time()"));
  if (reps < 1 || warmup < 0) {
    return core::make_error(core::ErrorCode::kInvalidArgument, "cpu testbed",
                            "time() got warmup = " + std::to_string(warmup) + ", reps = " +
                                std::to_string(reps) + "; use warmup >= 0 and reps >= 1");
  }
  for (int i = 0; i < warmup; ++i) MOETUNE_RETURN_IF_ERROR(run_once(config));
  TimingResult timing;
  timing.samples_us.reserve(reps);
  for (int i = 0; i < reps; ++i) {
    auto const start = std::chrono::steady_clock::now();
    MOETUNE_RETURN_IF_ERROR(run_once(config));
    auto const stop = std::chrono::steady_clock::now();
    timing.samples_us.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
  }
  timing.median_us = median_us(timing.samples_us);
  return timing;
}

}  // namespace moetune::kernels::cpu
