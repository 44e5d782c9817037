// Argument checks of the torch ops (op_args.hpp).
#include "op_args.hpp"

#include <c10/util/Exception.h>
#include <cstdint>

#include <sstream>
#include <vector>

namespace moetune::python {
namespace {

std::string sizes_of(at::Tensor const& t) {
  std::ostringstream os;
  os << t.sizes();
  return os.str();
}

std::string strides_of(at::Tensor const& t) {
  std::ostringstream os;
  os << t.strides();
  return os.str();
}

void check_rank(char const* op, char const* name, at::Tensor const& t, int64_t rank,
                char const* layout) {
  TORCH_CHECK_VALUE(t.dim() == rank, op, ": ", name, " has ", t.dim(), " dimensions (shape ",
                    sizes_of(t), "); expected ", rank, ": ", layout);
}

void check_shape(char const* op, char const* name, at::Tensor const& t,
                 std::initializer_list<int64_t> want, char const* layout) {
  TORCH_CHECK_VALUE(t.sizes() == at::IntArrayRef(want), op, ": ", name, " has shape ", sizes_of(t),
                    "; expected ", at::IntArrayRef(want), " (", layout, ")");
}

void check_contiguous(char const* op, char const* name, at::Tensor const& t) {
  TORCH_CHECK_VALUE(t.is_contiguous(), op, ": ", name, " is not contiguous (strides ",
                    strides_of(t), " for shape ", sizes_of(t), "); pass a row-major tensor, e.g. ",
                    name, ".contiguous()");
}

/// The kernels read 16-byte vectors from the start of every row.
void check_aligned(char const* op, char const* name, at::Tensor const& t) {
  if (t.is_meta() || t.numel() == 0) return;
  auto const off = reinterpret_cast<std::uintptr_t>(t.const_data_ptr()) % 16;
  TORCH_CHECK_VALUE(off == 0, op, ": ", name, "'s data starts ", off,
                    " bytes past a 16-byte boundary (storage offset ", t.storage_offset(),
                    "); expected 16-byte aligned data: pass ", name, ".clone()");
}

void check_device(char const* op, char const* name, at::Tensor const& t, at::Device want) {
  TORCH_CHECK_VALUE(t.device() == want, op, ": ", name, " is on ", t.device(),
                    " but hidden_states is on ", want, "; move every tensor to one device");
}

core::DType dtype_of(char const* op, at::Tensor const& x) {
  if (x.scalar_type() == at::kBFloat16) return core::DType::kBf16;
  TORCH_CHECK_TYPE(x.scalar_type() == at::kFloat && !x.is_cuda(), op, ": hidden_states has dtype ",
                   x.scalar_type(), "; expected bfloat16",
                   x.is_cuda() ? " on a GPU" : " or float32 on the CPU");
  return core::DType::kFp32;
}

void check_ids_in_range(char const* op, at::Tensor const& ids, int64_t num_experts) {
  if (ids.is_cuda() || ids.numel() == 0) return;
  auto const lo = ids.min().item<int64_t>();
  auto const hi = ids.max().item<int64_t>();
  TORCH_CHECK_VALUE(lo >= 0 && hi < num_experts, op, ": topk_ids holds expert ids in [", lo, ", ",
                    hi, "]; expected [0, ", num_experts - 1, "] (w1 has ", num_experts,
                    " experts)");
}

/// w1_bias [E, N1] and w2_bias [E, K]: both or neither, on the device and in the dtype of the
/// weights, contiguous. Sets p.has_bias.
void check_biases(char const* op, MoeTensors const& t, core::MoeProblem& p) {
  TORCH_CHECK_VALUE((t.w1_bias == nullptr) == (t.w2_bias == nullptr), op, ": w1_bias is ",
                    t.w1_bias ? "given" : "None", " but w2_bias is ", t.w2_bias ? "given" : "None",
                    "; pass both biases or neither (a zero tensor stands for a missing one)");
  if (t.w1_bias == nullptr) return;
  p.has_bias = true;
  std::pair<char const*, at::Tensor const*> const biases[] = {{"w1_bias", t.w1_bias},
                                                              {"w2_bias", t.w2_bias}};
  // fp8 layers keep their biases in the activations' dtype.
  auto const want =
      t.quant != core::Quant::kNone ? t.hidden_states.scalar_type() : t.w1.scalar_type();
  for (auto [name, b] : biases) {
    check_device(op, name, *b, t.hidden_states.device());
    TORCH_CHECK_TYPE(b->scalar_type() == want, op, ": ", name, " has dtype ", b->scalar_type(),
                     "; expected ", want,
                     t.quant != core::Quant::kNone ? " (hidden_states' dtype: the weights are fp8)"
                                                   : " (the weights' dtype)");
    check_rank(op, name, *b, 2, name == std::string("w1_bias") ? "[E, N1]" : "[E, K]");
  }
  check_shape(op, "w1_bias", *t.w1_bias, {p.num_experts, core::gemm1_n(p)},
              "[E, N1]: one row per expert, N1 = w1.shape[1]");
  check_shape(op, "w2_bias", *t.w2_bias, {p.num_experts, p.hidden_size},
              "[E, K]: one row per expert, K = hidden_states.shape[1]");
  for (auto [name, b] : biases) check_contiguous(op, name, *b);
}

/// One fp32 scale tensor of an fp8 call: on the device, contiguous, of `want` shape (or,
/// per-tensor, `numel` values).
void check_scale(char const* op, char const* name, at::Tensor const* t, at::Device dev,
                 std::vector<int64_t> const& want, char const* layout) {
  TORCH_CHECK_VALUE(t != nullptr, op, ": ", name, " is None; the fp8 layer needs it (", layout,
                    ")");
  check_device(op, name, *t, dev);
  TORCH_CHECK_TYPE(t->scalar_type() == at::kFloat, op, ": ", name, " has dtype ", t->scalar_type(),
                   "; expected float32");
  bool const ok = want.size() == 1 ? t->numel() == want[0] : t->sizes() == at::IntArrayRef(want);
  TORCH_CHECK_VALUE(ok, op, ": ", name, " has shape ", sizes_of(*t), "; expected ",
                    at::IntArrayRef(want), " (", layout, ")");
  check_contiguous(op, name, *t);
}

/// The scales of an fp8 call against the problem (p.quant set).
void check_fp8_scales(char const* op, MoeTensors const& t, core::MoeProblem const& p) {
  at::Device const dev = t.hidden_states.device();
  int64_t const e = p.num_experts, b = core::kFp8BlockSize;
  if (p.quant == core::Quant::kFp8Block) {
    check_scale(op, "w1_scale", t.w1_scale, dev, {e, core::gemm1_n(p) / b, p.hidden_size / b},
                "[E, N1/128, K/128]: one per 128x128 block of w1");
    check_scale(op, "w2_scale", t.w2_scale, dev, {e, p.hidden_size / b, p.intermediate_size / b},
                "[E, K/128, I/128]: one per 128x128 block of w2");
    TORCH_CHECK_VALUE(t.a1_scale == nullptr && t.a2_scale == nullptr, op,
                      ": a1_scale/a2_scale given with block_shape [128, 128]; block-scaled "
                      "activations are quantised per token per 128 channels on the fly: pass None");
    return;
  }
  check_scale(op, "w1_scale", t.w1_scale, dev, {e}, "[E]: one per expert");
  check_scale(op, "w2_scale", t.w2_scale, dev, {e}, "[E]: one per expert");
  check_scale(op, "a1_scale", t.a1_scale, dev, {1}, "one static scale of the GEMM1 input");
  check_scale(op, "a2_scale", t.a2_scale, dev, {1}, "one static scale of the GEMM2 input");
}

}  // namespace

namespace {

/// Ranks, device, and the dtypes of the weights (bf16/fp16/fp32 as hidden_states, or e4m3 for an
/// fp8 layer, whose activations are bf16) and of the routing tensors; the layer's dtype.
core::DType check_moe_dtypes(MoeTensors const& t, char const* op) {
  check_rank(op, "hidden_states", t.hidden_states, 2, "[M, K]");
  check_rank(op, "w1", t.w1, 3, "[E, N1, K]");
  check_rank(op, "w2", t.w2, 3, "[E, K, I]");
  check_rank(op, "topk_weights", t.topk_weights, 2, "[M, top_k]");
  check_rank(op, "topk_ids", t.topk_ids, 2, "[M, top_k]");
  at::Device const dev = t.hidden_states.device();
  TORCH_CHECK_VALUE(dev.is_cpu() || dev.is_cuda(), op, ": hidden_states is on ", dev,
                    "; expected a CPU or CUDA tensor");
  core::DType const dtype = dtype_of(op, t.hidden_states);
  bool const fp8 = t.quant != core::Quant::kNone;
  TORCH_CHECK_TYPE(!fp8 || dtype == core::DType::kBf16, op, ": hidden_states has dtype ",
                   t.hidden_states.scalar_type(), "; fp8 weights take bfloat16 activations");
  auto const want_w = fp8 ? at::kFloat8_e4m3fn : t.hidden_states.scalar_type();
  for (auto [name, w] : {std::pair{"w1", &t.w1}, std::pair{"w2", &t.w2}}) {
    check_device(op, name, *w, dev);
    TORCH_CHECK_TYPE(w->scalar_type() == want_w, op, ": ", name, " has dtype ", w->scalar_type(),
                     "; expected ", want_w,
                     fp8 ? " (fp8 weights)" : " (the dtype of hidden_states)");
  }
  check_device(op, "topk_weights", t.topk_weights, dev);
  check_device(op, "topk_ids", t.topk_ids, dev);
  auto const wt = t.topk_weights.scalar_type();
  TORCH_CHECK_TYPE(wt == at::kFloat || wt == t.hidden_states.scalar_type(), op,
                   ": topk_weights has dtype ", wt, "; expected float32 or ",
                   t.hidden_states.scalar_type());
  auto const it = t.topk_ids.scalar_type();
  TORCH_CHECK_TYPE(it == at::kInt || it == at::kLong, op, ": topk_ids has dtype ", it,
                   "; expected int32 or int64");
  return dtype;
}

/// The shapes of w1, w2 and the routing tensors against problem p, and the contiguous layouts.
void check_moe_shapes(MoeTensors const& t, core::MoeProblem const& p, char const* op) {
  int64_t const n1 = core::gemm1_n(p);
  char const* w1_layout = core::is_gated(p.activation)
                              ? "[E, 2*I, K]: gate rows then up rows, I = w2.shape[2]"
                              : "[E, I, K] for a non-gated activation, I = w2.shape[2]";
  check_shape(op, "w1", t.w1, {p.num_experts, n1, p.hidden_size}, w1_layout);
  check_shape(op, "w2", t.w2, {p.num_experts, p.hidden_size, p.intermediate_size},
              "[E, K, I], E = w1.shape[0], K = hidden_states.shape[1]");
  check_shape(op, "topk_ids", t.topk_ids, {p.num_tokens, p.top_k},
              "[M, top_k], M = hidden_states.shape[0]");
  check_shape(op, "topk_weights", t.topk_weights, {p.num_tokens, p.top_k},
              "[M, top_k], the shape of topk_ids");
  check_contiguous(op, "hidden_states", t.hidden_states);
  check_contiguous(op, "w1", t.w1);
  check_contiguous(op, "w2", t.w2);
  check_aligned(op, "hidden_states", t.hidden_states);
  check_aligned(op, "w1", t.w1);
  check_aligned(op, "w2", t.w2);
}

}  // namespace

core::MoeProblem check_moe_tensors(MoeTensors const& t, std::string const& activation,
                                   char const* op) {
  auto act = core::parse_activation(activation);
  TORCH_CHECK_VALUE(act.ok(), op, ": activation: ", act.ok() ? "" : act.error().message);
  core::DType const dtype = check_moe_dtypes(t, op);
  at::Device const dev = t.hidden_states.device();
  core::MoeProblem p;
  p.num_tokens = t.hidden_states.size(0);
  p.hidden_size = t.hidden_states.size(1);
  p.num_experts = t.w1.size(0);
  p.intermediate_size = t.w2.size(2);
  p.top_k = t.topk_ids.size(1);
  p.activation = *act;
  p.dtype = dtype;
  p.arch = dev.is_cpu() ? "cpu" : "sm_90a";
  p.quant = t.quant;
  check_moe_shapes(t, p, op);
  check_biases(op, t, p);
  auto valid = core::validate(p);
  TORCH_CHECK_VALUE(valid.ok(), op, ": ", valid.ok() ? "" : valid.error().message);
  if (p.quant != core::Quant::kNone) check_fp8_scales(op, t, p);
  check_ids_in_range(op, t.topk_ids, p.num_experts);
  return p;
}

at::Tensor ids_as_int32(at::Tensor const& topk_ids) {
  if (topk_ids.scalar_type() == at::kInt && topk_ids.is_contiguous()) return topk_ids;
  return topk_ids.to(at::kInt).contiguous();
}

at::Tensor weights_as_fp32(at::Tensor const& topk_weights) {
  if (topk_weights.scalar_type() == at::kFloat && topk_weights.is_contiguous()) {
    return topk_weights;
  }
  return topk_weights.to(at::kFloat).contiguous();
}

}  // namespace moetune::python
