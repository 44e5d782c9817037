// The fp32 inner kernel of cpu_tiled: acc += A * B on packed panels, one block_k step.
#pragma once

namespace moetune::kernels::cpu::detail {

/// acc[rows, width] += a[rows, depth] * b[depth, width] (row-major, packed fp32). Every element
/// is updated as acc = acc + a * b for kk = 0, 1, ..., depth - 1 in that order, with no fused
/// multiply-add in the default build, so the bits are the same on every path and x86-64 machine.
void microkernel(float const* a, int rows, int depth, float const* b, int width, float* acc);

/// The same product as microkernel, one row and one column at a time with no register tiles:
/// the path the cpu_register_tiles lever falls back to. Same operation order, so the same bits.
void microkernel_plain(float const* a, int rows, int depth, float const* b, int width, float* acc);

}  // namespace moetune::kernels::cpu::detail
