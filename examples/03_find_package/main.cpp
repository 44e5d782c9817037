// Why: an engine that embeds MoeRunner links the installed package and nothing else of moetune
// (no tuner, no SQLite), includes one header, and serves a layer from its own buffers. This one
// runs a small layer on the cpu backend and checks it against a float64 loop over the same data.
// tests/install/find_package_test.sh builds it from an installed prefix.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "moetune/moe_runner.hpp"

namespace {

float bf16_round(float v) {  // the bf16 value nearest v, as a float
  uint32_t u;
  std::memcpy(&u, &v, 4);
  u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u;
  std::memcpy(&v, &u, 4);
  return v;
}

uint16_t bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return static_cast<uint16_t>(u >> 16);
}

float value(uint16_t b) {
  uint32_t u = uint32_t{b} << 16;
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

}  // namespace

int main() {
  constexpr int64_t M = 5, K = 64, I = 32, E = 4, top_k = 2;
  moetune::core::MoeProblem problem{.num_tokens = 0,
                                    .hidden_size = K,
                                    .intermediate_size = I,
                                    .num_experts = E,
                                    .top_k = top_k,
                                    .arch = "cpu"};
  auto runner = moetune::MoeRunner::create(problem, "cpu", {.max_tokens = 64});
  if (!runner.ok()) {
    std::fprintf(stderr, "consumer: %s\n", runner.error().to_string().c_str());
    return 1;
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  auto fill = [&](std::vector<uint16_t>& v, float scale) {
    for (auto& x : v) x = bits(bf16_round(normal(rng) * scale));
  };
  std::vector<uint16_t> x(M * K), w1(E * 2 * I * K), w2(E * K * I), out(M * K);
  fill(x, 1.f), fill(w1, 0.125f), fill(w2, 0.18f);
  std::vector<int32_t> ids = {0, 1, 1, 2, 3, 0, 2, 3, 1, 3};
  std::vector<float> weights = {0.6f, 0.4f, 0.5f, 0.5f, 0.9f, 0.1f, 0.3f, 0.7f, 0.2f, 0.8f};
  auto s = (*runner)->run(nullptr, x.data(), ids.data(), weights.data(), w1.data(), w2.data(),
                          out.data(), M);
  if (!s.ok()) {
    std::fprintf(stderr, "consumer: %s\n", s.error().to_string().c_str());
    return 1;
  }
  double err = 0, norm = 0;
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t k = 0; k < K; ++k) {
      double want = 0;
      for (int64_t j = 0; j < top_k; ++j) {
        int64_t const e = ids[m * top_k + j];
        for (int64_t i = 0; i < I; ++i) {
          double g = 0, u = 0;
          for (int64_t c = 0; c < K; ++c) {
            g += value(w1[(e * 2 * I + i) * K + c]) * value(x[m * K + c]);
            u += value(w1[(e * 2 * I + I + i) * K + c]) * value(x[m * K + c]);
          }
          want +=
              weights[m * top_k + j] * value(w2[(e * K + k) * I + i]) * g / (1 + std::exp(-g)) * u;
        }
      }
      err += std::pow(value(out[m * K + k]) - want, 2);
      norm += want * want;
    }
  }
  double const rel = std::sqrt(err / norm);
  std::printf("moetune consumer: relative L2 error %.2e against float64\n", rel);
  return rel < 1e-2 ? 0 : 1;
}
