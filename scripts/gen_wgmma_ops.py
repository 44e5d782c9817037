#!/usr/bin/env python3
"""Writes src/kernels/cuda/sm90_wgmma_ops.cuh: wgmma m64nNk16 bf16 wrappers whose operand lists
are too long to write by hand. Run from the repository root after editing."""
import pathlib

HEADER = pathlib.Path(__file__).with_name("gen_wgmma_ops_header.cuh.in").read_text()
parts = [HEADER]
for n in range(16, 257, 8):
    r = n // 2
    regs = ",".join("%%%d" % i for i in range(r))
    cons = ", ".join('"+f"(d[%d])' % i for i in range(r))
    parts.append('''
template <>
struct Wgmma<%d> {
  /// d[%d] += A(64x16) * B(%dx16)^T; scale_d = 0 overwrites d.
  MOETUNE_DEVICE static void mma(float* d, moe_u64 desc_a, moe_u64 desc_b, int scale_d) {
    asm volatile(
        "{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n"
        "wgmma.mma_async.sync.aligned.m64n%dk16.f32.bf16.bf16 {%s}, %%%d, %%%d, p, 1, 1, 0, 0;\\n}\\n"
        : %s
        : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
};
''' % (n, r, n, r + 2, n, regs, r, r + 1, cons))
parts.append("\n}  // namespace moetune_dev\n")
pathlib.Path("src/kernels/cuda/sm90_wgmma_ops.cuh").write_text("".join(parts))
