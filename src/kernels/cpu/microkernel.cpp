// cpu_tiled's microkernel: 4 x 16 register tiles of accumulators (4 rows share each load of B,
// 16 columns are two AVX or four SSE vectors), with plain loops for ragged edges.
// NOTE: target_clones builds an AVX2 and a baseline copy, picked at load time. The avx2 target
// does not enable FMA (a separate ISA flag), so neither copy fuses a * b + c and both round
// identically: the output bits do not depend on the machine. (GCC contracts by default in C++,
// so a build with -march=native on an FMA machine gets different, still deterministic, bits.)
#include "kernels/cpu/microkernel.hpp"

#include <cstdint>

namespace moetune::kernels::cpu::detail {
namespace {

constexpr int kTileRows = 4;
constexpr int kTileCols = 16;

// Eight floats as one value; aligned(4) lets loads and stores hit unaligned addresses. Without
// AVX, GCC lowers each operation to two SSE instructions.
typedef float Vec8 __attribute__((vector_size(32), aligned(4)));

inline Vec8 load8(float const* p) { return *reinterpret_cast<Vec8 const*>(p); }
inline void store8(float* p, Vec8 v) { *reinterpret_cast<Vec8*>(p) = v; }

}  // namespace

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void microkernel(float const* a, int rows, int depth, float const* b, int width, float* acc) {
  int const full_cols = width / kTileCols * kTileCols;
  int i = 0;
  for (; i + kTileRows <= rows; i += kTileRows) {
    float* c0 = acc + (i + 0) * width;
    float* c1 = acc + (i + 1) * width;
    float* c2 = acc + (i + 2) * width;
    float* c3 = acc + (i + 3) * width;
    float const* a0 = a + (i + 0) * depth;
    float const* a1 = a + (i + 1) * depth;
    float const* a2 = a + (i + 2) * depth;
    float const* a3 = a + (i + 3) * depth;
    for (int j = 0; j < full_cols; j += kTileCols) {
      // (kTileRows, kTileCols) accumulators in registers for the whole depth.
      Vec8 x00 = load8(c0 + j), x01 = load8(c0 + j + 8);
      Vec8 x10 = load8(c1 + j), x11 = load8(c1 + j + 8);
      Vec8 x20 = load8(c2 + j), x21 = load8(c2 + j + 8);
      Vec8 x30 = load8(c3 + j), x31 = load8(c3 + j + 8);
      float const* bk = b + j;
      for (int kk = 0; kk < depth; ++kk, bk += width) {
        Vec8 const b0 = load8(bk);
        Vec8 const b1 = load8(bk + 8);
        Vec8 const s0 = Vec8{} + a0[kk], s1 = Vec8{} + a1[kk];
        Vec8 const s2 = Vec8{} + a2[kk], s3 = Vec8{} + a3[kk];
        x00 += s0 * b0;
        x01 += s0 * b1;
        x10 += s1 * b0;
        x11 += s1 * b1;
        x20 += s2 * b0;
        x21 += s2 * b1;
        x30 += s3 * b0;
        x31 += s3 * b1;
      }
      store8(c0 + j, x00), store8(c0 + j + 8, x01);
      store8(c1 + j, x10), store8(c1 + j + 8, x11);
      store8(c2 + j, x20), store8(c2 + j + 8, x21);
      store8(c3 + j, x30), store8(c3 + j + 8, x31);
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

void microkernel_plain(float const* a, int rows, int depth, float const* b, int width, float* acc) {
  for (int r = 0; r < rows; ++r) {
    float* c = acc + static_cast<int64_t>(r) * width;
    for (int kk = 0; kk < depth; ++kk) {
      float const ar = a[static_cast<int64_t>(r) * depth + kk];
      float const* bk = b + static_cast<int64_t>(kk) * width;
      for (int j = 0; j < width; ++j) c[j] += ar * bk[j];
    }
  }
}

}  // namespace moetune::kernels::cpu::detail
