#include "core/problem.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <utility>
#include <vector>

#include "core/names.hpp"

namespace moetune::core {

namespace {

/// One enum's CLI/JSON names, in the order error messages list them.
template <class T>
struct Named {
  T value;
  const char* name;
};
constexpr Named<Activation> kActivationNames[] = {{Activation::kSiluGated, "silu"},
                                                  {Activation::kRelu2, "relu2"},
                                                  {Activation::kGelu, "gelu"},
                                                  {Activation::kGeluTanh, "gelu_tanh"},
                                                  {Activation::kSwigluOai, "swigluoai"}};
constexpr Named<DType> kDTypeNames[] = {
    {DType::kBf16, "bf16"}, {DType::kFp16, "fp16"}, {DType::kFp32, "fp32"}};
constexpr Named<Quant> kQuantNames[] = {
    {Quant::kNone, "none"}, {Quant::kFp8Tensor, "fp8_tensor"}, {Quant::kFp8Block, "fp8_block"}};

/// The name of `value` (the table's first name when it has none).
template <class T, size_t N>
std::string_view name_of(Named<T> const (&table)[N], T value) {
  for (auto const& n : table) {
    if (n.value == value) return n.name;
  }
  return table[0].name;
}

/// The value named `text`, or "unknown <what> '<text>'; expected one of ..." with a suggestion.
template <class T, size_t N>
Result<T> parse_named(Named<T> const (&table)[N], std::string_view text, char const* what) {
  std::vector<std::string> names;
  std::string listed;
  for (auto const& n : table) {
    if (text == n.name) return n.value;
    names.emplace_back(n.name);
    listed += (listed.empty() ? "" : ", ") + std::string(n.name);
  }
  return make_error(ErrorCode::kInvalidArgument, what,
                    "unknown " + std::string(what) + " '" + clip(text) + "'; expected one of " +
                        listed + did_you_mean(text, names));
}

Error bad_field(std::string const& field, int64_t seen, std::string const& allowed) {
  return make_error(ErrorCode::kInvalidArgument, "problem",
                    field + " = " + std::to_string(seen) + " is out of range; expected " + allowed);
}

}  // namespace

std::string_view to_string(Activation act) { return name_of(kActivationNames, act); }

Result<Activation> parse_activation(std::string_view text) {
  return parse_named(kActivationNames, text, "activation");
}

std::string_view to_string(DType dtype) { return name_of(kDTypeNames, dtype); }

Result<DType> parse_dtype(std::string_view text) { return parse_named(kDTypeNames, text, "dtype"); }

std::string_view to_string(Quant q) { return name_of(kQuantNames, q); }

Result<Quant> parse_quant(std::string_view text) { return parse_named(kQuantNames, text, "quant"); }

int dtype_bytes(DType dtype) { return dtype == DType::kFp32 ? 4 : 2; }

bool is_gated(Activation act) {
  return act == Activation::kSiluGated || act == Activation::kSwigluOai;
}

int64_t gemm1_n(MoeProblem const& p) {
  return is_gated(p.activation) ? 2 * p.intermediate_size : p.intermediate_size;
}

int64_t num_pairs(MoeProblem const& p) { return p.num_tokens * p.top_k; }

double flops(MoeProblem const& p) {
  double const n1k = static_cast<double>(gemm1_n(p)) * static_cast<double>(p.hidden_size);
  double const ki = static_cast<double>(p.hidden_size) * static_cast<double>(p.intermediate_size);
  return 2.0 * static_cast<double>(num_pairs(p)) * (n1k + ki);
}

double expert_weight_bytes(MoeProblem const& p) {
  double const n1k = static_cast<double>(gemm1_n(p)) * static_cast<double>(p.hidden_size);
  double const ki = static_cast<double>(p.hidden_size) * static_cast<double>(p.intermediate_size);
  if (p.quant == Quant::kNone) return (n1k + ki) * dtype_bytes(p.dtype);
  double const scales = p.quant == Quant::kFp8Block
                            ? (n1k + ki) / (double{kFp8BlockSize} * double{kFp8BlockSize})
                            : 2.0;
  return n1k + ki + 4.0 * scales;
}

Status validate(MoeProblem const& p) {
  if (p.num_tokens < 0 || p.num_tokens > kMaxTokens) {
    return bad_field("num_tokens (M)", p.num_tokens,
                     "0 <= M <= " + std::to_string(kMaxTokens) + " (2^24)");
  }
  if (p.hidden_size < 1 || p.hidden_size > kMaxHiddenSize) {
    return bad_field("hidden_size (K)", p.hidden_size, "1 <= K <= 1048576 (2^20)");
  }
  if (p.intermediate_size < 1 || p.intermediate_size > kMaxIntermediateSize) {
    return bad_field("intermediate_size (I)", p.intermediate_size, "1 <= I <= 1048576 (2^20)");
  }
  if (p.num_experts < 1 || p.num_experts > kMaxExperts) {
    return bad_field("num_experts (E)", p.num_experts, "1 <= E <= 65536 (2^16)");
  }
  if (p.top_k < 1 || p.top_k > p.num_experts) {
    return bad_field("top_k", p.top_k,
                     "1 <= top_k <= num_experts (" + std::to_string(p.num_experts) + ")");
  }
  if (p.quant != Quant::kNone && p.dtype != DType::kBf16) {
    return make_error(ErrorCode::kInvalidArgument, "problem",
                      "quant = " + std::string(to_string(p.quant)) +
                          " with dtype = " + std::string(to_string(p.dtype)) +
                          "; quantised layers take and return bf16 (dtype=bf16)");
  }
  if (p.quant == Quant::kFp8Block) {
    for (auto [name, v] : {std::pair{"hidden_size (K)", p.hidden_size},
                           std::pair{"intermediate_size (I)", p.intermediate_size}}) {
      if (v % kFp8BlockSize != 0) {
        return bad_field(name, v, "a multiple of 128 with quant = fp8_block (128x128 blocks)");
      }
    }
  }
  if (p.arch.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "problem",
                      "arch is empty; expected e.g. 'sm_90a' or 'cpu'");
  }
  return Status::Ok();
}

std::string to_string(MoeProblem const& p) {
  return "MoeProblem(M=" + std::to_string(p.num_tokens) + ", K=" + std::to_string(p.hidden_size) +
         ", I=" + std::to_string(p.intermediate_size) + ", E=" + std::to_string(p.num_experts) +
         ", top_k=" + std::to_string(p.top_k) + ", act=" + std::string(to_string(p.activation)) +
         ", dtype=" + std::string(to_string(p.dtype)) + ", arch=" + p.arch +
         (p.has_bias ? ", bias" : "") +
         (p.quant != Quant::kNone ? ", quant=" + std::string(to_string(p.quant)) : "") + ")";
}

namespace {

/// The KEY=VALUE items of a problem spec, each key known and given once (errors name `where`).
Result<std::map<std::string, std::string>> problem_spec_items(std::string_view spec,
                                                              std::string const& where) {
  static std::vector<std::string> const kKeys = {"E",     "K", "I",    "topk", "act",
                                                 "dtype", "M", "arch", "bias", "quant"};
  std::map<std::string, std::string> values;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t const comma = std::min(spec.find(',', pos), spec.size());
    std::string_view const item = spec.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) {
      if (spec.empty()) break;  // no items: the missing-key check names the first one
      return make_error(ErrorCode::kInvalidArgument, where,
                        comma == spec.size() ? "ends with a comma; remove it"
                                             : "empty item between commas; expected KEY=VALUE");
    }
    size_t const eq = item.find('=');
    if (eq == std::string_view::npos) {
      return make_error(ErrorCode::kInvalidArgument, where,
                        "item '" + clip(item) + "' has no '='; expected KEY=VALUE");
    }
    std::string key(item.substr(0, eq));
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      return make_error(ErrorCode::kInvalidArgument, where,
                        "unknown key '" + clip(key) +
                            "'; expected E, K, I, topk, act, dtype, M, arch, bias, quant" +
                            did_you_mean(key, kKeys));
    }
    if (values.count(key) != 0) {
      return make_error(ErrorCode::kInvalidArgument, where, "key '" + key + "' given twice");
    }
    values[key] = std::string(item.substr(eq + 1));
  }
  return values;
}

}  // namespace

Result<MoeProblem> parse_problem_spec(std::string_view spec) {
  std::string const where = "problem '" + clip(spec, 120) + "'";
  auto items = problem_spec_items(spec, where);
  if (!items.ok()) return items.error();
  std::map<std::string, std::string>& values = *items;
  for (char const* required : {"E", "K", "I", "topk", "act"}) {
    if (values.count(required) == 0) {
      return make_error(
          ErrorCode::kInvalidArgument, where,
          std::string("missing required key '") + required +
              "'; the form is E=128,K=2048,I=768,topk=8,act=silu[,dtype=bf16][,M=16]");
    }
  }
  auto parse_int = [&](char const* key, int64_t* out) -> Status {
    std::string const& text = values[key];
    auto const [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
    if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
      return make_error(ErrorCode::kInvalidArgument, where,
                        std::string(key) + "='" + clip(text) + "' is not an integer");
    }
    return Status::Ok();
  };
  MoeProblem p;
  MOETUNE_RETURN_IF_ERROR(parse_int("E", &p.num_experts));
  MOETUNE_RETURN_IF_ERROR(parse_int("K", &p.hidden_size));
  MOETUNE_RETURN_IF_ERROR(parse_int("I", &p.intermediate_size));
  MOETUNE_RETURN_IF_ERROR(parse_int("topk", &p.top_k));
  if (values.count("M") != 0) MOETUNE_RETURN_IF_ERROR(parse_int("M", &p.num_tokens));
  auto act = parse_activation(values["act"]);
  if (!act.ok()) return make_error(act.error().code, where, act.error().message);
  p.activation = *act;
  if (values.count("dtype") != 0) {
    auto dtype = parse_dtype(values["dtype"]);
    if (!dtype.ok()) return make_error(dtype.error().code, where, dtype.error().message);
    p.dtype = *dtype;
  }
  if (values.count("arch") != 0) p.arch = values["arch"];
  if (values.count("bias") != 0) {
    std::string const& b = values["bias"];
    if (b != "0" && b != "1") {
      return make_error(
          ErrorCode::kInvalidArgument, where,
          "bias='" + clip(b) + "'; expected 0 or 1 (per-expert biases on both GEMMs)");
    }
    p.has_bias = b == "1";
  }
  if (values.count("quant") != 0) {
    auto quant = parse_quant(values["quant"]);
    if (!quant.ok()) return make_error(quant.error().code, where, quant.error().message);
    p.quant = *quant;
  }
  Status const st = validate(p);
  if (!st.ok()) return make_error(st.error().code, where, st.error().message);
  return p;
}

std::string format_problem_spec(MoeProblem const& p) {
  return "E=" + std::to_string(p.num_experts) + ",K=" + std::to_string(p.hidden_size) +
         ",I=" + std::to_string(p.intermediate_size) + ",topk=" + std::to_string(p.top_k) +
         ",act=" + std::string(to_string(p.activation)) +
         ",dtype=" + std::string(to_string(p.dtype)) + ",M=" + std::to_string(p.num_tokens) +
         ",arch=" + p.arch + (p.has_bias ? ",bias=1" : "") +
         (p.quant != Quant::kNone ? ",quant=" + std::string(to_string(p.quant)) : "");
}

}  // namespace moetune::core
