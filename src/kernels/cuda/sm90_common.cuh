// sm90_common.cuh: header-free device helpers for the sm90_gather kernels (NVRTC compiles these
// with no CUDA headers at all): bf16 bit helpers, cp.async, ldmatrix, mma.sync, swizzled smem
// addressing. Layout facts used by every kernel of the family:
//   - Tiles in shared memory are K-major rows of kBlockK bf16, split into 16-byte chunks; chunk c
//     of row r is stored at chunk position swizzle(r, c) so that ldmatrix of 8 rows at one logical
//     chunk touches 8 distinct bank groups (conflict-free).
// Covered by tests/kernels/cuda/sm90_gather_test.cpp (device) and the JIT compile test (CI).
#pragma once

typedef unsigned short moe_bf16;  // raw bf16 bits
typedef unsigned int moe_u32;
typedef unsigned long long moe_u64;

#define MOETUNE_DEVICE __device__ __forceinline__

namespace moetune_dev {

/// Compile-time int as a value (what std::integral_constant is, without the std headers).
template <int kValue>
struct IntConst {
  static constexpr int value = kValue;
};

MOETUNE_DEVICE float bf16_to_float(moe_bf16 h) { return __uint_as_float(((moe_u32)h) << 16); }

/// Packs two floats into bf16x2 (round to nearest even); `lo` lands in the low half.
MOETUNE_DEVICE moe_u32 pack_bf16x2(float lo, float hi) {
  moe_u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/// One float to bf16 (round to nearest even), as the low half of pack_bf16x2.
MOETUNE_DEVICE moe_bf16 float_to_bf16(float v) {
  return static_cast<moe_bf16>(pack_bf16x2(v, 0.0f) & 0xffffu);
}

/// Two floats to packed e4m3 (lo at the lower address), rounded to nearest, saturated.
MOETUNE_DEVICE unsigned short fp8x2_e4m3(float lo, float hi) {
  unsigned short out;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(out) : "f"(hi), "f"(lo));
  return out;
}

/// Two packed e4m3 values (the lower byte first) as floats, exactly (through f16x2, which holds
/// every e4m3 value).
MOETUNE_DEVICE float2 e4m3x2_to_float2(unsigned short q) {
  moe_u32 h2;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(q));
  float2 f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f.x) : "h"((unsigned short)(h2 & 0xFFFFu)));
  asm("cvt.f32.f16 %0, %1;" : "=f"(f.y) : "h"((unsigned short)(h2 >> 16)));
  return f;
}

/// A packed bf16x2 divided by the scale s (IEEE division) into packed e4m3x2: the fp8 regime's
/// quantisation of a GEMM input, bit for bit wherever it runs (quant kernel or GEMM1 epilogue).
MOETUNE_DEVICE unsigned short bf16x2_to_e4m3x2(moe_u32 v, float s) {
  return fp8x2_e4m3(__fdiv_rn(bf16_to_float((moe_bf16)(v & 0xFFFF)), s),
                    __fdiv_rn(bf16_to_float((moe_bf16)(v >> 16)), s));
}

/// Four bf16 values (two packed bf16x2, column order) quantised by bf16x2_to_e4m3x2, packed in
/// column order.
MOETUNE_DEVICE moe_u32 bf16x4_to_e4m3x4(moe_u32 lo, moe_u32 hi, float s) {
  return (moe_u32)bf16x2_to_e4m3x2(lo, s) | ((moe_u32)bf16x2_to_e4m3x2(hi, s) << 16);
}

MOETUNE_DEVICE moe_u32 smem_u32(const void* p) { return (moe_u32)__cvta_generic_to_shared(p); }

/// 16-byte async copy global -> shared; `src_bytes` 0 fills the destination with zeros.
MOETUNE_DEVICE void cp_async_16(moe_u32 dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}
/// A gathered row's 16 bytes: the 16-byte async copy where the row has a source (valid), else
/// zeros stored into shared memory directly, so that no global request is sent for a padding row.
/// NOTE: the tma_ws GEMM1 gather's copies of src-size 0, every padding chunk to one fixed address,
/// cost that GEMM1 4-8% on the H200 at S1 M=8192, S2 M=4096/8192 and S3 M=1024-8192 (same bits both
/// ways); in the cp.async main loop, where every thread loads between MMAs, these stores made the
/// layer 1-4% slower, so it keeps cp_async_16 of src-size 0.
MOETUNE_DEVICE void cp_async_16_or_zero(moe_u32 dst, const void* src, bool valid) {
  if (valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
  } else {
    asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};\n" ::"r"(dst), "r"(0) : "memory");
  }
}
MOETUNE_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
MOETUNE_DEVICE void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

/// stmatrix x4, transposed: register i of every lane holds its (row lane / 4, columns 2 (lane % 4)
/// and + 1) of 8 x 8 bf16 matrix i (the m16n8 / wgmma accumulator layout); column k of matrix i
/// goes, as 8 contiguous bf16, to the address that lane 8 i + k gives.
MOETUNE_DEVICE void stmatrix_x4_trans(moe_u32 addr, moe_u32 r0, moe_u32 r1, moe_u32 r2,
                                      moe_u32 r3) {
  asm volatile(
      "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
      "r"(r0), "r"(r1), "r"(r2), "r"(r3)
      : "memory");
}

MOETUNE_DEVICE uint4 ld_shared_v4(moe_u32 addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

MOETUNE_DEVICE void ldmatrix_x4(moe_u32 addr, moe_u32& r0, moe_u32& r1, moe_u32& r2, moe_u32& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

/// D = A(16x16, row) * B(16x8, col) + D, bf16 inputs, fp32 accumulators.
MOETUNE_DEVICE void mma_bf16_16816(float* d, moe_u32 const* a, moe_u32 b0, moe_u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// Byte offset of 16-byte chunk `chunk` of row `row` in a swizzled tile of kBlockK bf16 per row.
template <int kBlockK>
MOETUNE_DEVICE int swizzled_offset(int row, int chunk) {
  constexpr int kChunksPerRow = kBlockK / 8;
  static_assert(kBlockK == 32 || kBlockK == 64 || kBlockK == 128, "block_k must be 32, 64 or 128");
  int phys;
  if (kChunksPerRow == 4) {
    phys = chunk ^ ((row >> 1) & 3);  // 64-byte rows: two rows share a 128-byte bank line
  } else {
    phys = chunk ^ (row & 7);  // 128/256-byte rows: xor the low three chunk bits
  }
  return row * (kBlockK * 2) + phys * 16;
}

/// Programmatic dependent launch (PDL): let the next kernel in the stream start its launch now
/// (it still waits for this grid's results in pdl_wait), and wait for the previous grid's results.
/// Both are no-ops when the launch carries no programmatic edge.
MOETUNE_DEVICE void pdl_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}
MOETUNE_DEVICE void pdl_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

/// Sum over the warp's lanes with a fixed xor tree (deterministic); every lane gets the total.
MOETUNE_DEVICE float warp_sum(float v) {
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
  return v;
}

MOETUNE_DEVICE float act_silu(float g) { return g / (1.0f + __expf(-g)); }
MOETUNE_DEVICE float act_relu2(float h) {
  float r = h > 0.0f ? h : 0.0f;
  return r * r;
}
MOETUNE_DEVICE float act_gelu(float h) {
  return 0.5f * h * (1.0f + erff(h * 0.70710678118654752f));
}
MOETUNE_DEVICE float act_gelu_tanh(float h) {
  float u = 0.7978845608028654f * (h + 0.044715f * h * h * h);
  return 0.5f * h * (1.0f + tanhf(u));
}

/// Activation ids shared with the host launcher (sm90_gather_geometry.cpp's act_id). A GEMM1
/// kernel's kAct may carry kActBias: it adds b1[expert] to the accumulators before the activation.
enum ActId {
  kActSiluGated = 0,
  kActRelu2 = 1,
  kActGelu = 2,
  kActGeluTanh = 3,
  kActSwigluOai = 4,
  kActBias = 8
};

/// The activation of kAct without the bias bit.
__host__ __device__ constexpr int act_base(int act) { return act & (kActBias - 1); }
/// True when kAct reads gate and up halves.
__host__ __device__ constexpr bool act_gated(int act) {
  return act_base(act) == kActSiluGated || act_base(act) == kActSwigluOai;
}
__host__ __device__ constexpr bool act_biased(int act) { return (act & kActBias) != 0; }

/// gpt-oss's clamped SwiGLU (core::kSwigluOai*): (clamp(up, -7, 7) + 1) * g * sigmoid(1.702 g),
/// g = min(gate, 7).
MOETUNE_DEVICE float act_swigluoai(float gate, float up) {
  const float g = fminf(gate, 7.0f);
  const float u = fminf(fmaxf(up, -7.0f), 7.0f);
  return (u + 1.0f) * (g / (1.0f + __expf(-1.702f * g)));
}

/// A gated activation of (gate, up).
template <int kAct>
MOETUNE_DEVICE float apply_gated_act(float gate, float up) {
  if (act_base(kAct) == kActSwigluOai) return act_swigluoai(gate, up);
  return act_silu(gate) * up;
}

template <int kAct>
MOETUNE_DEVICE float apply_act(float h) {
  if (act_base(kAct) == kActRelu2) return act_relu2(h);
  if (act_base(kAct) == kActGelu) return act_gelu(h);
  return act_gelu_tanh(h);
}

/// Element i of a bf16 bias row (read-only path).
MOETUNE_DEVICE float bias_at(const moe_bf16* row, long long i) {
  return bf16_to_float(__ldg(row + i));
}

}  // namespace moetune_dev
