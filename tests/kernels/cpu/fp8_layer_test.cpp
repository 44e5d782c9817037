// The host fp8 layer (kernels/cpu/fp8_layer.hpp): e4m3 conversion against a brute-force nearest
// value, the drawn layer's shapes and scale spread, and the fp8 reference: deterministic, near
// the unquantised reference, and far from it when one block's scale is wrong.
#include "kernels/cpu/fp8_layer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "cpu_test_util.hpp"
#include "kernels/cpu/moe_data.hpp"
#include "kernels/cpu/reference.hpp"

namespace moetune::kernels::cpu {
namespace {

/// The nearest finite e4m3 value to x (ties to the even code), by trying all 254 of them.
float nearest_e4m3(float x) {
  float best = 0.0f;
  int best_code = 0;
  for (int b = 0; b < 256; ++b) {
    const float v = e4m3_to_float(static_cast<uint8_t>(b));
    if (std::isnan(v)) continue;
    const float d = std::fabs(v - x), bd = std::fabs(best - x);
    if (d < bd || (d == bd && (b & 1) == 0 && (best_code & 1) == 1)) best = v, best_code = b;
  }
  return best;
}

TEST(Fp8E4m3, EveryCodeRoundTripsAndKnownValuesConvert) {
  for (int b = 0; b < 256; ++b) {
    const float v = e4m3_to_float(static_cast<uint8_t>(b));
    if (std::isnan(v)) continue;
    EXPECT_EQ(float_to_e4m3(v), b) << "code " << b << " value " << v;
  }
  EXPECT_EQ(float_to_e4m3(1.0f), 0x38);
  EXPECT_EQ(float_to_e4m3(448.0f), 0x7E);
  EXPECT_EQ(float_to_e4m3(460.0f), 0x7E);  // rounds to 448
  EXPECT_EQ(float_to_e4m3(1.0e6f), 0x7E);  // saturates (satfinite)
  EXPECT_EQ(float_to_e4m3(-1.0e6f), 0xFE);
  EXPECT_EQ(float_to_e4m3(1.0625f), 0x38);  // halfway between 1 and 1.125: even (1)
  EXPECT_EQ(float_to_e4m3(1.1875f), 0x3A);  // halfway between 1.125 and 1.25: even (1.25)
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);  // half the smallest subnormal: 0
  EXPECT_EQ(float_to_e4m3(std::ldexp(3.0f, -10)), 0x02);  // 1.5 quanta: even (2)
  EXPECT_EQ(float_to_e4m3(NAN), 0x7F);
}

TEST(Fp8E4m3, RandomValuesGoToTheNearestCode) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> exponent(-12.0, 9.5), sign(-1.0, 1.0);
  for (int i = 0; i < 20000; ++i) {
    const float x = static_cast<float>(std::copysign(std::exp2(exponent(rng)), sign(rng)));
    const float want = std::fabs(x) >= kE4m3Max ? std::copysign(kE4m3Max, x) : nearest_e4m3(x);
    ASSERT_EQ(e4m3_to_float(float_to_e4m3(x)), want) << "x = " << x;
  }
}

core::MoeProblem fp8_problem(core::Quant quant, int64_t m) {
  core::MoeProblem p = testing::small_problem(m, 4, 256, 128, 2, core::Activation::kSiluGated);
  p.quant = quant;
  return p;
}

double rel_l2(std::vector<double> const& a, std::vector<double> const& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
  return std::sqrt(num / den);
}

TEST(Fp8Layer, DrawsBlockScalesOrdersOfMagnitudeApartAndRefusesBadShapes) {
  auto l = generate_fp8_layer(fp8_problem(core::Quant::kFp8Block, 3), 5);
  ASSERT_TRUE(l.ok()) << l.error().to_string();
  EXPECT_EQ(l->w1.size(), 4u * 256 * 256);
  EXPECT_EQ(l->w1_scale.size(), 4u * 2 * 2);
  EXPECT_EQ(l->w2_scale.size(), 4u * 2 * 1);
  auto [lo, hi] = std::minmax_element(l->w1_scale.begin(), l->w1_scale.end());
  EXPECT_GT(*hi / *lo, 100.0f);
  auto t = generate_fp8_layer(fp8_problem(core::Quant::kFp8Tensor, 3), 5);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->w1_scale.size(), 4u);
  EXPECT_FALSE(generate_fp8_layer(fp8_problem(core::Quant::kNone, 3), 5).ok());
  core::MoeProblem odd = fp8_problem(core::Quant::kFp8Block, 3);
  odd.intermediate_size = 96;
  auto e = generate_fp8_layer(odd, 5);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("multiples of 128"), std::string::npos);
}

/// The unquantised fp64 reference of the same layer: dequantised weights, x and h exact.
std::vector<double> unquantised(core::MoeProblem const& p, Fp8HostLayer const& l,
                                MoeHostData const& d) {
  const bool block = p.quant == core::Quant::kFp8Block;
  auto dq = [&](std::vector<uint8_t> const& w, std::vector<float> const& s, int64_t rows,
                int64_t cols) {
    std::vector<float> out(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      const int64_t e = static_cast<int64_t>(i) / (rows * cols);
      const int64_t r = static_cast<int64_t>(i) / cols % rows, c = static_cast<int64_t>(i) % cols;
      const float sc = block ? s[(e * (rows / 128) + r / 128) * (cols / 128) + c / 128] : s[e];
      out[i] = e4m3_to_float(w[i]) * sc;
    }
    return out;
  };
  auto w1 = dq(l.w1, l.w1_scale, core::gemm1_n(p), p.hidden_size);
  auto w2 = dq(l.w2, l.w2_scale, p.hidden_size, p.intermediate_size);
  MoeInputsView v{d.x, d.routing.topk_ids, d.routing.topk_weights, w1, w2, {}, {}};
  return *reference_moe(p, v);
}

TEST(Fp8Layer, ReferenceIsNearTheUnquantisedOneAndAWrongBlockScaleIsFar) {
  for (core::Quant q : {core::Quant::kFp8Block, core::Quant::kFp8Tensor}) {
    const core::MoeProblem p = fp8_problem(q, 9);
    auto d = generate_moe_data(p, core::RoutingProfile{}, 3);
    ASSERT_TRUE(d.ok()) << d.error().to_string();
    EXPECT_TRUE(d->w1.empty()) << "fp8 weights come from generate_fp8_layer";
    auto l = generate_fp8_layer(p, 3);
    ASSERT_TRUE(l.ok());
    auto run = [&](Fp8HostLayer const& layer) {
      return *reference_fp8_moe(p, layer, d->x, d->routing.topk_ids, d->routing.topk_weights, {},
                                {});
    };
    const std::vector<double> ref = run(*l);
    EXPECT_EQ(run(*l), ref) << "deterministic";
    // x and h quantised to e4m3 (3 mantissa bits): a few percent from the exact layer.
    const double quantised = rel_l2(ref, unquantised(p, *l, *d));
    EXPECT_GT(quantised, 1e-3) << "the activations were not quantised";
    EXPECT_LT(quantised, 0.1);
    // Negative twin: one scale of w2 multiplied by 10 (a wrong block's scale): far outside the
    // fp8 tolerance (3e-2).
    Fp8HostLayer wrong = *l;
    wrong.w2_scale[0] *= 10.0f;
    EXPECT_GT(rel_l2(run(wrong), ref), 0.1) << core::to_string(q);
  }
}

TEST(Fp8Layer, ReferenceRefusesMisshapenInputs) {
  const core::MoeProblem p = fp8_problem(core::Quant::kFp8Block, 2);
  auto l = generate_fp8_layer(p, 1);
  ASSERT_TRUE(l.ok());
  std::vector<float> x(2 * 256, 0.5f), w(4, 0.5f);
  std::vector<int32_t> ids{0, 1, 2, 7};
  auto r = reference_fp8_moe(p, *l, x, ids, w, {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "topk_ids[1, 1] = 7 is outside [0, 4); fix the routing");
  auto s = reference_fp8_moe(p, *l, std::vector<float>(3), ids, w, {}, {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message,
            "x has 3 elements, expected 512; pass arrays shaped as documented in fp8_layer.hpp");
}

}  // namespace
}  // namespace moetune::kernels::cpu
