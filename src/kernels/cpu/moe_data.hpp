// Generated inputs of one MoE problem (x, w1, w2, routing), shared by every testbed so the cpu
// and cuda backends are checked on the same data against the same fp64 reference.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "core/problem.hpp"
#include "core/result.hpp"
#include "core/routing.hpp"
#include "kernels/cpu/reference.hpp"

namespace moetune::kernels::cpu {

/// Inputs in float (values already rounded to problem.dtype) and, for bf16 problems, the same
/// values as bf16 bit patterns (what a kernel reads). Shapes as in reference.hpp.
struct MoeHostData {
  core::MoeProblem problem;
  core::Routing routing;
  std::vector<float> x;
  std::vector<float> w1;
  std::vector<float> w2;
  std::vector<float> b1;         ///< [E, N1] when problem.has_bias, else empty
  std::vector<float> b2;         ///< [E, K] when problem.has_bias, else empty
  std::vector<uint16_t> x_bf16;  ///< bf16 problems only, else empty
  std::vector<uint16_t> w1_bf16;
  std::vector<uint16_t> w2_bf16;
  std::vector<uint16_t> b1_bf16;
  std::vector<uint16_t> b2_bf16;

  /// The tensors as the reference reads them.
  MoeInputsView view() const;
  /// Pointers in the problem dtype (bf16 bits or float), as a kernel reads them.
  void const* x_data() const;
  void const* w1_data() const;
  void const* w2_data() const;
  /// nullptr when the problem has no biases.
  void const* b1_data() const;
  void const* b2_data() const;
};

/// One N(0, 1) sample pair by Box-Muller from two 53-bit uniforms of `rng` (never log(0)).
/// std::normal_distribution is not used because its output differs between standard libraries.
std::pair<double, double> normal_pair(std::mt19937_64& rng);

/// Fills `values` (its size is kept) with N(0, 1) * scale rounded to `dtype`.
void fill_normal(std::mt19937_64& rng, double scale, core::DType dtype, std::vector<float>& values);

/// Host bytes one checked run of `problem` holds at once: the inputs in float and in bf16, the
/// routing, the output, the fp64 reference and the cpu backend's pair buffers. In double: a
/// valid problem's sizes never overflow it.
double host_bytes_estimate(core::MoeProblem const& problem);

/// Generates x ~ N(0,1), w1 ~ N(0,1)/sqrt(K), w2 ~ N(0,1)/sqrt(I) and, when problem.has_bias,
/// b1 ~ N(0,1), b2 ~ N(0,1)/4 (in that order, from one std::mt19937_64 seeded with `seed`) and
/// routing from `profile` with its seed replaced by profile.seed + seed (seed 0 reproduces the
/// profile's own routing). A problem with quant (fp8) gets no w1 and w2 here (they stay empty:
/// generate_fp8_layer in fp8_layer.hpp draws them). Fails when the problem is invalid, its dtype
/// is fp16 (not generated yet: bf16 or fp32), it needs more than this machine's memory
/// (host_bytes_estimate, checked before allocating), or routing fails.
core::Result<MoeHostData> generate_moe_data(core::MoeProblem const& problem,
                                            core::RoutingProfile const& profile, uint64_t seed);

}  // namespace moetune::kernels::cpu
