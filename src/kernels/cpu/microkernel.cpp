// cpu_tiled's microkernel: 4 x 16 register tiles of accumulators (4 rows share each load of B,
// 16 columns are two AVX or four SSE vectors), with plain loops for ragged edges.
// NOTE: target_clones builds an AVX2 and a baseline copy, picked at load time. The project
// compiles with -std=c++20 (not gnu++20), where GCC does not contract a * b + c into an FMA, so
// both copies round identically and the output bits do not depend on the machine.
#include "kernels/cpu/microkernel.hpp"

#include <cstdint>

namespace moetune::kernels::cpu::detail {
namespace {

constexpr int kTileRows = 4;
constexpr int kTileCols = 16;

}  // namespace

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void microkernel(float const* a, int rows, int depth, float const* b, int width, float* acc) {
  int const full_cols = width / kTileCols * kTileCols;
  int i = 0;
  for (; i + kTileRows <= rows; i += kTileRows) {
    for (int j0 = 0; j0 < full_cols; j0 += kTileCols) {
      float c[kTileRows][kTileCols];
      for (int r = 0; r < kTileRows; ++r) {
        for (int j = 0; j < kTileCols; ++j) c[r][j] = acc[(i + r) * width + j0 + j];
      }
      for (int kk = 0; kk < depth; ++kk) {
        float const* bk = b + static_cast<int64_t>(kk) * width + j0;
        for (int r = 0; r < kTileRows; ++r) {
          float const ar = a[(i + r) * depth + kk];
          for (int j = 0; j < kTileCols; ++j) c[r][j] += ar * bk[j];
        }
      }
      for (int r = 0; r < kTileRows; ++r) {
        for (int j = 0; j < kTileCols; ++j) acc[(i + r) * width + j0 + j] = c[r][j];
      }
    }
  }
  // Ragged edges: the columns past the last full 16 of the blocked rows, then leftover rows.
  for (int r = 0; r < rows; ++r) {
    int const first_col = r < i ? full_cols : 0;
    float* c = acc + r * width;
    for (int kk = 0; kk < depth; ++kk) {
      float const ar = a[r * depth + kk];
      float const* bk = b + static_cast<int64_t>(kk) * width;
      for (int j = first_col; j < width; ++j) c[j] += ar * bk[j];
    }
  }
}

}  // namespace moetune::kernels::cpu::detail
