// MoeProblem: what an MoE layer asks for (tokens, sizes, experts, activation, dtypes, arch).
// It never holds pointers, streams or a choice of kernel (STYLE 9); KernelConfig is the choice.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace moetune::core {

/// The activation between the two GEMMs.
/// kSiluGated: w1 has N1 = 2I rows, [0, I) gate and [I, 2I) up; act = silu(gate) * up.
/// kRelu2:     non-gated (Nemotron), N1 = I; act = relu(h)^2.
/// kGelu:      non-gated, exact erf GELU.   kGeluTanh: non-gated, tanh-approximated GELU.
/// kSwigluOai: gated as kSiluGated (gpt-oss; vLLM's "swigluoai"): g = min(gate, 7),
///             u = clamp(up, -7, 7), act = (u + 1) * g * sigmoid(1.702 g).
enum class Activation { kSiluGated, kRelu2, kGelu, kGeluTanh, kSwigluOai };

/// The constants of kSwigluOai (gpt-oss's, fixed as in the engines).
inline constexpr double kSwigluOaiAlpha = 1.702;
inline constexpr double kSwigluOaiLimit = 7.0;

/// Element type of x, w1, w2 and out. Accumulation is always fp32.
enum class DType { kBf16, kFp16, kFp32 };

/// How w1, w2 and the activations entering each GEMM are quantised (x, out and the bias stay in
/// `dtype`, which must then be bf16). fp8 is e4m3 (max 448), accumulation fp32.
/// kFp8Tensor: one fp32 scale per expert for w1 and for w2 ([E]); one static fp32 scale for the
///             GEMM1 input and one for the GEMM2 input (the engines' a1_scale / a2_scale).
/// kFp8Block:  fp32 scales per 128x128 weight block (w1 [E, N1/128, K/128], w2 [E, K/128,
///             I/128]); activations quantised per token per 128 channels on the fly (scale =
///             amax / 448), promoted per 128-deep k-block in fp32. Needs K and I multiples of 128.
enum class Quant { kNone, kFp8Tensor, kFp8Block };
/// CLI/JSON names: "none", "fp8_tensor", "fp8_block".
std::string_view to_string(Quant q);
Result<Quant> parse_quant(std::string_view text);
/// The fp8 block of kFp8Block (weights: kFp8BlockSize square; activations: 1 x kFp8BlockSize).
inline constexpr int kFp8BlockSize = 128;
/// Largest finite e4m3 value: a block's scale is amax / kFp8Max.
inline constexpr double kFp8Max = 448.0;

/// CLI/JSON names: "silu", "relu2", "gelu", "gelu_tanh", "swigluoai".
std::string_view to_string(Activation act);
/// Parses a CLI/JSON activation name; the error offers "did you mean".
Result<Activation> parse_activation(std::string_view text);
/// CLI/JSON names: "bf16", "fp16", "fp32".
std::string_view to_string(DType dtype);
Result<DType> parse_dtype(std::string_view text);
/// Bytes per element of a dtype.
int dtype_bytes(DType dtype);

/// True when w1 holds gate and up halves (N1 = 2I).
bool is_gated(Activation act);

/// Largest token count any command accepts; beyond it a count is a typo, not a workload.
inline constexpr int64_t kMaxTokens = int64_t{1} << 24;
/// Largest expert count (models ship up to 512) and hidden / intermediate size (up to ~30k) any
/// command accepts. With M <= 2^24 these keep every element count (M*top_k*K, E*2I*K) far
/// inside int64, so sizes are computed exactly and checked before anything is allocated.
inline constexpr int64_t kMaxExperts = int64_t{1} << 16;
inline constexpr int64_t kMaxHiddenSize = int64_t{1} << 20;
inline constexpr int64_t kMaxIntermediateSize = int64_t{1} << 20;

/// What is asked. Sizes are element counts. `num_tokens` (M) may be 0 (an empty batch).
struct MoeProblem {
  int64_t num_tokens = 0;         ///< M: tokens in the batch, before top-k
  int64_t hidden_size = 0;        ///< K: model hidden size (x is [M, K], out is [M, K])
  int64_t intermediate_size = 0;  ///< I: per-expert intermediate size (vLLM's N)
  int64_t num_experts = 0;        ///< E
  int64_t top_k = 1;              ///< experts per token
  Activation activation = Activation::kSiluGated;
  DType dtype = DType::kBf16;   ///< x, w1, w2 and out
  std::string arch = "sm_90a";  ///< target arch; "cpu" for the cpu backend's own tables
  /// Per-expert biases b1 [E, N1] (added to GEMM1 before the activation) and b2 [E, K] (added to
  /// GEMM2 before the routing weight), in the weights' dtype (problem spec: bias=1). Tables and
  /// their keys describe the unbiased layer, whose choice serves both.
  bool has_bias = false;
  /// Quantised weights and GEMM inputs (problem spec quant=fp8_tensor|fp8_block); see Quant.
  Quant quant = Quant::kNone;

  bool operator==(MoeProblem const&) const = default;
};

/// N1: rows of w1 per expert (2I when gated, else I).
int64_t gemm1_n(MoeProblem const& p);
/// Token-expert pairs, M * top_k.
int64_t num_pairs(MoeProblem const& p);
/// 2 * M * top_k * (N1*K + K*I): the floating-point work of the layer.
double flops(MoeProblem const& p);
/// Bytes of one expert's weights (w1 and w2): the problem's dtype, or 1 byte an element plus the
/// fp32 scales when quantised.
double expert_weight_bytes(MoeProblem const& p);

/// Checks every field: sizes in [1, kMax*] (M in [0, kMaxTokens]), top_k <= E; a quantised
/// problem has dtype bf16, and fp8_block K and I multiples of 128. The error names the field, the
/// value seen and what is allowed.
Status validate(MoeProblem const& p);

/// "MoeProblem(M=16, K=2048, I=768, E=128, top_k=8, act=silu, dtype=bf16, arch=sm_90a)"
/// (", bias" and ", quant=fp8_block" before the parenthesis when set).
std::string to_string(MoeProblem const& p);

/// Parses the one problem form every command accepts:
///   "E=128,K=2048,I=768,topk=8,act=silu,dtype=bf16[,M=16][,arch=sm_90a][,bias=1][,quant=..]"
/// Keys are case-sensitive as written; unknown keys get "did you mean"; E, K, I, topk and act
/// are required, dtype defaults to bf16, M to 0. The result is validated.
Result<MoeProblem> parse_problem_spec(std::string_view spec);
/// The inverse of parse_problem_spec (M and arch included), so parse(format(p)) == p.
std::string format_problem_spec(MoeProblem const& p);

}  // namespace moetune::core
