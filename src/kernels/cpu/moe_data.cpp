// Seeded input generation for testbeds; see moe_data.hpp.
#include "kernels/cpu/moe_data.hpp"

#include <cmath>
#include <numbers>
#include <string>

#include "core/device_info.hpp"
#include "kernels/cpu/bf16.hpp"

namespace moetune::kernels::cpu {
namespace {

/// Uniform in (0, 1): 53 random bits, shifted by half a step so 0 never occurs.
double uniform_open(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53;
}

std::vector<uint16_t> to_bf16_bits(std::vector<float> const& values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = float_to_bf16_bits(values[i]);
  return bits;
}

}  // namespace

MoeInputsView MoeHostData::view() const {
  return MoeInputsView{.x = x,
                       .topk_ids = routing.topk_ids,
                       .topk_weights = routing.topk_weights,
                       .w1 = w1,
                       .w2 = w2,
                       .b1 = b1,
                       .b2 = b2};
}

void const* MoeHostData::x_data() const {
  return problem.dtype == core::DType::kBf16 ? static_cast<void const*>(x_bf16.data()) : x.data();
}
void const* MoeHostData::w1_data() const {
  return problem.dtype == core::DType::kBf16 ? static_cast<void const*>(w1_bf16.data()) : w1.data();
}
void const* MoeHostData::w2_data() const {
  return problem.dtype == core::DType::kBf16 ? static_cast<void const*>(w2_bf16.data()) : w2.data();
}
void const* MoeHostData::b1_data() const {
  if (!problem.has_bias) return nullptr;
  return problem.dtype == core::DType::kBf16 ? static_cast<void const*>(b1_bf16.data()) : b1.data();
}
void const* MoeHostData::b2_data() const {
  if (!problem.has_bias) return nullptr;
  return problem.dtype == core::DType::kBf16 ? static_cast<void const*>(b2_bf16.data()) : b2.data();
}

std::pair<double, double> normal_pair(std::mt19937_64& rng) {
  double const u1 = uniform_open(rng);
  double const u2 = uniform_open(rng);
  double const radius = std::sqrt(-2.0 * std::log(u1));
  double const angle = 2.0 * std::numbers::pi * u2;
  return {radius * std::cos(angle), radius * std::sin(angle)};
}

void fill_normal(std::mt19937_64& rng, double scale, core::DType dtype,
                 std::vector<float>& values) {
  for (size_t i = 0; i < values.size(); i += 2) {
    auto const [z0, z1] = normal_pair(rng);
    values[i] = static_cast<float>(z0 * scale);
    if (i + 1 < values.size()) values[i + 1] = static_cast<float>(z1 * scale);
  }
  if (dtype == core::DType::kBf16) {
    for (float& v : values) v = round_to_bf16(v);
  }
}

double host_bytes_estimate(core::MoeProblem const& p) {
  double const m = static_cast<double>(p.num_tokens);
  double const k = static_cast<double>(p.hidden_size);
  double const pairs = m * static_cast<double>(p.top_k);
  double const weights = static_cast<double>(p.num_experts) * k *
                         static_cast<double>(core::gemm1_n(p) + p.intermediate_size);
  double const float_and_bf16 = 4 + 2;
  double const weight_bytes = p.quant == core::Quant::kNone ? float_and_bf16 : 1;  // e4m3
  double const inputs = m * k * float_and_bf16 + weights * weight_bytes + pairs * 8;
  double const output_and_reference = m * k * (4 + 8);
  double const pair_buffers = pairs * static_cast<double>(core::gemm1_n(p) + p.hidden_size) * 4;
  return inputs + output_and_reference + pair_buffers;
}

core::Result<MoeHostData> generate_moe_data(core::MoeProblem const& problem,
                                            core::RoutingProfile const& profile, uint64_t seed) {
  MOETUNE_RETURN_IF_ERROR(core::validate(problem));
  if (problem.dtype == core::DType::kFp16) {
    return core::make_error(core::ErrorCode::kUnsupported, "generate_moe_data",
                            "problem.dtype = fp16 has no input generator yet (allowed: bf16, "
                            "fp32); use bf16 or fp32");
  }
  MOETUNE_RETURN_IF_ERROR(core::check_host_bytes(
      host_bytes_estimate(problem), "generate_moe_data",
      "M=" + std::to_string(problem.num_tokens) + " of " + core::to_string(problem),
      "use a smaller M or problem"));
  MoeHostData data;
  data.problem = problem;
  int64_t const m = problem.num_tokens;
  int64_t const k = problem.hidden_size;
  int64_t const inter = problem.intermediate_size;
  int64_t const e = problem.num_experts;
  data.x.resize(static_cast<size_t>(m * k));
  if (problem.quant == core::Quant::kNone) {  // fp8 weights: generate_fp8_layer (fp8_layer.hpp)
    data.w1.resize(static_cast<size_t>(e * core::gemm1_n(problem) * k));
    data.w2.resize(static_cast<size_t>(e * k * inter));
  }
  std::mt19937_64 rng(seed);
  fill_normal(rng, 1.0, problem.dtype, data.x);
  fill_normal(rng, 1.0 / std::sqrt(static_cast<double>(k)), problem.dtype, data.w1);
  fill_normal(rng, 1.0 / std::sqrt(static_cast<double>(inter)), problem.dtype, data.w2);
  if (problem.has_bias) {
    data.b1.resize(static_cast<size_t>(e * core::gemm1_n(problem)));
    data.b2.resize(static_cast<size_t>(e * k));
    fill_normal(rng, 1.0, problem.dtype, data.b1);
    fill_normal(rng, 0.25, problem.dtype, data.b2);
  }
  if (problem.dtype == core::DType::kBf16) {
    data.x_bf16 = to_bf16_bits(data.x);
    data.w1_bf16 = to_bf16_bits(data.w1);
    data.w2_bf16 = to_bf16_bits(data.w2);
    data.b1_bf16 = to_bf16_bits(data.b1);
    data.b2_bf16 = to_bf16_bits(data.b2);
  }
  core::RoutingProfile routing_profile = profile;
  routing_profile.seed = profile.seed + seed;
  auto routing = core::generate_routing(routing_profile, m, e, problem.top_k);
  if (!routing.ok()) {
    return routing.error();
  }
  data.routing = std::move(routing).value();
  return data;
}

}  // namespace moetune::kernels::cpu
