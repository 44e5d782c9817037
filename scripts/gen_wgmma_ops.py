#!/usr/bin/env python3
"""Writes the wgmma wrappers whose operand lists are too long to write by hand:
src/kernels/cuda/sm90_wgmma_ops.cuh (m64nNk16 bf16) and src/kernels/cuda/sm90_fp8_wgmma_ops.cuh
(m64nNk32 e4m3). Run from the repository root after editing."""
import pathlib

HERE = pathlib.Path(__file__).parent

FP8_HEADER = """// sm90_fp8_wgmma_ops.cuh: wgmma m64nNk32 wrappers, e4m3 x e4m3 -> fp32, A and B from shared
// memory through the descriptors of sm90_wgmma_ops.cuh (128-byte swizzle, K-major; fp8 wgmma
// takes no transpose). N in 16..256 step 16 (scripts/gen_wgmma_ops.py wrote this file; edit the
// generator, not the file). Covered by tests/python/test_fp8_gpu.py.
// clang-format off
#pragma once

#include "sm90_wgmma_ops.cuh"

namespace moetune_dev {

template <int kN>
struct WgmmaFp8;
"""


def wrapper(struct, n, k, types, transpose):
    r = n // 2
    regs = ",".join("%%%d" % i for i in range(r))
    cons = ", ".join('"+f"(d[%d])' % i for i in range(r))
    tail = ", 1, 1, 0, 0" if transpose else ", 1, 1"
    return '''
template <>
struct %s<%d> {
  /// d[%d] += A(64x%d) * B(%dx%d)^T; scale_d = 0 overwrites d.
  MOETUNE_DEVICE static void mma(float* d, moe_u64 desc_a, moe_u64 desc_b, int scale_d) {
    asm volatile(
        "{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n"
        "wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s {%s}, %%%d, %%%d, p%s;\\n}\\n"
        : %s
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
};
''' % (struct, n, r, k, n, k, r + 2, n, k, types, regs, r, r + 1, tail, cons)


def write(path, header, parts):
    (HERE.parent / path).write_text(header + "".join(parts) + "\n}  // namespace moetune_dev\n")


write("src/kernels/cuda/sm90_wgmma_ops.cuh",
      (HERE / "gen_wgmma_ops_header.cuh.in").read_text(),
      [wrapper("Wgmma", n, 16, "bf16.bf16", True) for n in range(16, 257, 8)])
write("src/kernels/cuda/sm90_fp8_wgmma_ops.cuh", FP8_HEADER,
      [wrapper("WgmmaFp8", n, 32, "e4m3.e4m3", False) for n in range(16, 257, 16)])
