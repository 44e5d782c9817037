// The host fp8 layer (fp8_layer.hpp). Covered by tests/kernels/cpu/fp8_layer_test.cpp.
#include "kernels/cpu/fp8_layer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>

#include "kernels/cpu/bf16.hpp"
#include "kernels/cpu/moe_data.hpp"
#include "kernels/cpu/reference.hpp"

namespace moetune::kernels::cpu {
namespace {

constexpr int64_t kGroup = 128;  // the block shape's side and the activations' group width

core::Error bad(std::string const& msg) {
  return core::make_error(core::ErrorCode::kInvalidArgument, "fp8 layer", msg);
}

std::array<float, 256> const& e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int b = 0; b < 256; ++b) {
      const int exp = (b >> 3) & 0xF, man = b & 7;
      const float mag = exp == 0 ? std::ldexp(static_cast<float>(man), -9)
                                 : std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
      t[b] = (b & 0x7F) == 0x7F ? NAN : (b & 0x80 ? -mag : mag);
    }
    return t;
  }();
  return table;
}

/// One row quantised and dequantised (dequantised_row), into double or float.
template <class Out>
void dequantise_row_to(float const* v, int64_t cols, bool block, float fixed, Out* out) {
  for (int64_t c0 = 0; c0 < cols; c0 += kGroup) {
    const int64_t n = std::min(kGroup, cols - c0);
    float s = fixed;
    if (block) {
      float amax = 0.0f;
      for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(v[c0 + i]));
      s = std::max(amax, 1e-10f) / kE4m3Max;
    }
    for (int64_t i = c0; i < c0 + n; ++i) {
      const float q = e4m3_to_float(float_to_e4m3(v[i] / s));
      out[i] = static_cast<Out>(static_cast<Out>(q) * static_cast<Out>(s));
    }
  }
}

/// The dequantised weight w[e][row][col] of [rows, cols] expert matrices.
/// The scale of w[e][row][col] in [rows, cols] expert matrices: per expert, or per 128 x 128 block.
float scale_of(float const* scale, bool block, int64_t e, int64_t row, int64_t col, int64_t rows,
               int64_t cols) {
  return block ? scale[(e * (rows / kGroup) + row / kGroup) * (cols / kGroup) + col / kGroup]
               : scale[e];
}

/// The dequantised weight w[e][row][col], exact in double.
double weight(std::vector<uint8_t> const& w, std::vector<float> const& scale, bool block, int64_t e,
              int64_t row, int64_t col, int64_t rows, int64_t cols) {
  const float q = e4m3_to_float(w[static_cast<size_t>((e * rows + row) * cols + col)]);
  return static_cast<double>(q) *
         static_cast<double>(scale_of(scale.data(), block, e, row, col, rows, cols));
}

core::Status check_shapes(core::MoeProblem const& p, Fp8HostLayer const& l, size_t x, size_t ids,
                          size_t weights, size_t b1, size_t b2) {
  const int64_t m = p.num_tokens, k = p.hidden_size, i = p.intermediate_size;
  const int64_t e = p.num_experts, n1 = core::gemm1_n(p);
  const bool block = p.quant == core::Quant::kFp8Block;
  const int64_t bias = p.has_bias ? 1 : 0;
  const std::pair<char const*, std::pair<size_t, int64_t>> checks[] = {
      {"x", {x, m * k}},
      {"topk_ids", {ids, m * p.top_k}},
      {"topk_weights", {weights, m * p.top_k}},
      {"w1", {l.w1.size(), e * n1 * k}},
      {"w2", {l.w2.size(), e * k * i}},
      {"w1_scale", {l.w1_scale.size(), block ? e * (n1 / kGroup) * (k / kGroup) : e}},
      {"w2_scale", {l.w2_scale.size(), block ? e * (k / kGroup) * (i / kGroup) : e}},
      {"b1", {b1, bias * e * n1}},
      {"b2", {b2, bias * e * k}}};
  for (auto const& [name, sizes] : checks) {
    if (static_cast<int64_t>(sizes.first) != sizes.second) {
      return bad(std::string(name) + " has " + std::to_string(sizes.first) +
                 " elements, expected " + std::to_string(sizes.second) +
                 "; pass arrays shaped as documented in fp8_layer.hpp");
    }
  }
  return core::Status::Ok();
}

}  // namespace

uint8_t float_to_e4m3(float x) {
  if (std::isnan(x)) return 0x7F;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const float a = std::fabs(x);
  if (a >= kE4m3Max) return sign | 0x7E;  // satfinite
  // The quantum at a's binade (subnormals below 2^-6: 2^-9), then round to nearest even.
  const int e = a == 0.0f ? -6 : std::max(std::ilogb(a), -6);
  const float quantum = std::ldexp(1.0f, e - 3);
  const float r = std::nearbyint(a / quantum) * quantum;  // exact: quantum is a power of two
  if (r >= kE4m3Max) return sign | 0x7E;
  if (r == 0.0f) return sign;
  const int re = std::ilogb(r);
  if (re < -6) return sign | static_cast<uint8_t>(r / std::ldexp(1.0f, -9));
  const int man = static_cast<int>(r / std::ldexp(1.0f, re) * 8.0f) - 8;
  return sign | static_cast<uint8_t>(((re + 7) << 3) | man);
}

float e4m3_to_float(uint8_t bits) { return e4m3_table()[bits]; }

void dequantised_row(float const* v, int64_t cols, bool block, float scale, double* out) {
  dequantise_row_to(v, cols, block, scale, out);
}

void dequantised_row(float const* v, int64_t cols, bool block, float scale, float* out) {
  dequantise_row_to(v, cols, block, scale, out);
}

void dequantise_weights(uint8_t const* w, float const* scale, bool block, int64_t experts,
                        int64_t rows, int64_t cols, float* out) {
  for (int64_t e = 0; e < experts; ++e) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t at = (e * rows + r) * cols;
      for (int64_t c = 0; c < cols; ++c) {
        out[at + c] = e4m3_to_float(w[at + c]) * scale_of(scale, block, e, r, c, rows, cols);
      }
    }
  }
}

core::Result<Fp8HostLayer> generate_fp8_layer(core::MoeProblem const& p, uint64_t seed) {
  const bool block = p.quant == core::Quant::kFp8Block;
  const int64_t e = p.num_experts, k = p.hidden_size, i = p.intermediate_size;
  const int64_t n1 = core::gemm1_n(p);
  if (p.quant == core::Quant::kNone) return bad("the problem has no quant (fp8_block, fp8_tensor)");
  if (k % kGroup != 0 || i % kGroup != 0 || n1 % kGroup != 0) {
    return bad("K = " + std::to_string(k) + ", I = " + std::to_string(i) +
               " and N1 = " + std::to_string(n1) + " must be multiples of 128 for fp8");
  }
  std::mt19937_64 rng(seed);
  Fp8HostLayer l;
  auto fill = [&](std::vector<uint8_t>& w, int64_t n) {
    w.resize(static_cast<size_t>(n));
    for (size_t j = 0; j < w.size(); j += 2) {
      auto const [a, b] = normal_pair(rng);
      w[j] = float_to_e4m3(static_cast<float>(64.0 * a));
      if (j + 1 < w.size()) w[j + 1] = float_to_e4m3(static_cast<float>(64.0 * b));
    }
  };
  auto scales = [&](std::vector<float>& s, int64_t n, int64_t depth) {
    std::uniform_real_distribution<double> u(block ? -2.0 : -0.5, block ? 2.0 : 0.5);
    const double base = 1.0 / (64.0 * std::sqrt(static_cast<double>(depth)));
    s.resize(static_cast<size_t>(n));
    for (float& v : s) v = static_cast<float>(base * std::pow(10.0, u(rng)));
  };
  fill(l.w1, e * n1 * k);
  fill(l.w2, e * k * i);
  scales(l.w1_scale, block ? e * (n1 / kGroup) * (k / kGroup) : e, k);
  scales(l.w2_scale, block ? e * (k / kGroup) * (i / kGroup) : e, i);
  l.a1_scale = 8.0f / kE4m3Max;
  l.a2_scale = 16.0f / kE4m3Max;
  return l;
}

core::Result<std::vector<double>> reference_fp8_moe(core::MoeProblem const& p,
                                                    Fp8HostLayer const& l, std::span<float const> x,
                                                    std::span<int32_t const> ids,
                                                    std::span<float const> weights,
                                                    std::span<float const> b1,
                                                    std::span<float const> b2) {
  MOETUNE_RETURN_IF_ERROR(
      check_shapes(p, l, x.size(), ids.size(), weights.size(), b1.size(), b2.size()));
  const int64_t m = p.num_tokens, k = p.hidden_size, inter = p.intermediate_size;
  const int64_t n1 = core::gemm1_n(p);
  const bool block = p.quant == core::Quant::kFp8Block, gated = core::is_gated(p.activation);
  std::vector<double> out(static_cast<size_t>(m * k), 0.0), xd(static_cast<size_t>(k));
  std::vector<double> h(static_cast<size_t>(n1)), hd(static_cast<size_t>(inter));
  std::vector<float> hf(static_cast<size_t>(inter));
  for (int64_t t = 0; t < m; ++t) {
    dequantised_row(x.data() + t * k, k, block, l.a1_scale, xd.data());
    for (int64_t slot = 0; slot < p.top_k; ++slot) {
      const int32_t ex = ids[static_cast<size_t>(t * p.top_k + slot)];
      if (ex < 0 || ex >= p.num_experts) {
        return bad("topk_ids[" + std::to_string(t) + ", " + std::to_string(slot) +
                   "] = " + std::to_string(ex) + " is outside [0, " +
                   std::to_string(p.num_experts) + "); fix the routing");
      }
      for (int64_t n = 0; n < n1; ++n) {
        double sum = 0.0;
        for (int64_t c = 0; c < k; ++c) {
          sum += weight(l.w1, l.w1_scale, block, ex, n, c, n1, k) * xd[static_cast<size_t>(c)];
        }
        h[static_cast<size_t>(n)] = p.has_bias ? sum + b1[static_cast<size_t>(ex * n1 + n)] : sum;
      }
      for (int64_t j = 0; j < inter; ++j) {  // h as GEMM1 stores it: bf16
        const double a = reference_activation(p.activation, h[static_cast<size_t>(j)],
                                              gated ? h[static_cast<size_t>(inter + j)] : 0.0);
        hf[static_cast<size_t>(j)] = round_to_bf16(static_cast<float>(a));
      }
      dequantised_row(hf.data(), inter, block, l.a2_scale, hd.data());
      const double w = weights[static_cast<size_t>(t * p.top_k + slot)];
      for (int64_t c = 0; c < k; ++c) {
        double sum = 0.0;
        for (int64_t j = 0; j < inter; ++j) {
          sum += weight(l.w2, l.w2_scale, block, ex, c, j, k, inter) * hd[static_cast<size_t>(j)];
        }
        if (p.has_bias) sum += b2[static_cast<size_t>(ex * k + c)];
        out[static_cast<size_t>(t * k + c)] += w * sum;
      }
    }
  }
  return out;
}

}  // namespace moetune::kernels::cpu
