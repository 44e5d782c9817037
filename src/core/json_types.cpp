// to_json / from_json for every core type. Keys are exactly the C++ field names; readers are
// strict (json_io.cpp) and start from the type's defaults, so an absent field keeps its default.
#include <vector>

#include "core/json_io.hpp"
#include "core/names.hpp"

namespace moetune::core {

namespace {

template <class E>
Status enum_from_names(Json const& j, JsonAt const& at, E* out, std::vector<E> const& values,
                       std::string_view (*name)(E)) {
  if (!j.is_string()) {
    return json_error(ErrorCode::kParse, at, "expected a string, got " + describe_json(j));
  }
  std::string const text = j.get<std::string>();
  std::vector<std::string> names;
  for (E v : values) {
    if (text == name(v)) {
      *out = v;
      return Status::Ok();
    }
    names.emplace_back(name(v));
  }
  std::string list;
  for (auto const& n : names) list += (list.empty() ? "" : ", ") + n;
  return json_error(
      ErrorCode::kParse, at,
      "unknown value '" + clip(text) + "'; expected one of " + list + did_you_mean(text, names));
}

template <class T>
Json opt(std::optional<T> const& v) {
  return v.has_value() ? Json(*v) : Json(nullptr);
}

}  // namespace

Status from_json(Json const& j, JsonAt const& at, RoutingKind* out) {
  return enum_from_names<RoutingKind>(
      j, at, out,
      {RoutingKind::kUniform, RoutingKind::kBalanced, RoutingKind::kBlockPermutation,
       RoutingKind::kZipf, RoutingKind::kTrace, RoutingKind::kSingleExpert},
      to_string);
}

Status from_json(Json const& j, JsonAt const& at, Rule* out) {
  return enum_from_names<Rule>(
      j, at, out,
      {Rule::kExactKey, Rule::kNearestKey, Rule::kTinyMGate, Rule::kBeyondRange, Rule::kEmptyTable},
      to_string);
}

Json to_json(MoeProblem const& p) {
  Json j{{"num_tokens", p.num_tokens},
         {"hidden_size", p.hidden_size},
         {"intermediate_size", p.intermediate_size},
         {"num_experts", p.num_experts},
         {"top_k", p.top_k},
         {"activation", to_string(p.activation)},
         {"dtype", to_string(p.dtype)},
         {"arch", p.arch}};
  if (p.quant != Quant::kNone) j["quant"] = to_string(p.quant);  // absent: bf16 files unchanged
  return j;
}

Status from_json(Json const& j, JsonAt const& at, MoeProblem* out) {
  auto r = ObjectReader::open(j, at,
                              {"num_tokens", "hidden_size", "intermediate_size", "num_experts",
                               "top_k", "activation", "dtype", "arch", "quant"});
  if (!r.ok()) return r.error();
  MOETUNE_RETURN_IF_ERROR(r->optional("quant", &out->quant));
  MOETUNE_RETURN_IF_ERROR(r->optional("num_tokens", &out->num_tokens));
  MOETUNE_RETURN_IF_ERROR(r->optional("hidden_size", &out->hidden_size));
  MOETUNE_RETURN_IF_ERROR(r->optional("intermediate_size", &out->intermediate_size));
  MOETUNE_RETURN_IF_ERROR(r->optional("num_experts", &out->num_experts));
  MOETUNE_RETURN_IF_ERROR(r->optional("top_k", &out->top_k));
  MOETUNE_RETURN_IF_ERROR(r->optional("activation", &out->activation));
  MOETUNE_RETURN_IF_ERROR(r->optional("dtype", &out->dtype));
  return r->optional("arch", &out->arch);
}

Json to_json(TileConfig const& t) {
  return Json{{"block_m", t.block_m},
              {"block_n", t.block_n},
              {"block_k", t.block_k},
              {"group_m", t.group_m}};
}

Status from_json(Json const& j, JsonAt const& at, TileConfig* out) {
  auto r = ObjectReader::open(j, at, {"block_m", "block_n", "block_k", "group_m"});
  if (!r.ok()) return r.error();
  MOETUNE_RETURN_IF_ERROR(r->optional("block_m", &out->block_m));
  MOETUNE_RETURN_IF_ERROR(r->optional("block_n", &out->block_n));
  MOETUNE_RETURN_IF_ERROR(r->optional("block_k", &out->block_k));
  return r->optional("group_m", &out->group_m);
}

Json to_json(PipelineConfig const& p) {
  return Json{{"num_warps", p.num_warps}, {"num_stages", p.num_stages}, {"split_k", p.split_k}};
}

Status from_json(Json const& j, JsonAt const& at, PipelineConfig* out) {
  auto r = ObjectReader::open(j, at, {"num_warps", "num_stages", "split_k"});
  if (!r.ok()) return r.error();
  MOETUNE_RETURN_IF_ERROR(r->optional("num_warps", &out->num_warps));
  MOETUNE_RETURN_IF_ERROR(r->optional("num_stages", &out->num_stages));
  return r->optional("split_k", &out->split_k);
}

Json to_json(LaunchConfig const& l) {
  return Json{{"swap_ab", l.swap_ab},
              {"cluster_m", l.cluster_m},
              {"cluster_n", l.cluster_n},
              {"schedule", to_string(l.schedule)},
              {"num_threads", l.num_threads}};
}

Status from_json(Json const& j, JsonAt const& at, LaunchConfig* out) {
  auto r =
      ObjectReader::open(j, at, {"swap_ab", "cluster_m", "cluster_n", "schedule", "num_threads"});
  if (!r.ok()) return r.error();
  MOETUNE_RETURN_IF_ERROR(r->optional("swap_ab", &out->swap_ab));
  MOETUNE_RETURN_IF_ERROR(r->optional("cluster_m", &out->cluster_m));
  MOETUNE_RETURN_IF_ERROR(r->optional("cluster_n", &out->cluster_n));
  MOETUNE_RETURN_IF_ERROR(r->optional("schedule", &out->schedule));
  return r->optional("num_threads", &out->num_threads);
}

Json to_json(KernelConfig const& k) {
  return Json{
      {"tile", to_json(k.tile)}, {"pipeline", to_json(k.pipeline)}, {"launch", to_json(k.launch)}};
}

Status from_json(Json const& j, JsonAt const& at, KernelConfig* out) {
  auto r = ObjectReader::open(j, at, {"tile", "pipeline", "launch"});
  if (!r.ok()) return r.error();
  MOETUNE_RETURN_IF_ERROR(r->optional("tile", &out->tile));
  MOETUNE_RETURN_IF_ERROR(r->optional("pipeline", &out->pipeline));
  return r->optional("launch", &out->launch);
}

Json to_json(MoeConfig const& c) {
  return Json{{"gemm1", to_json(c.gemm1)}, {"gemm2", to_json(c.gemm2)}};
}

Status from_json(Json const& j, JsonAt const& at, MoeConfig* out) {
  // A config with only gemm1 is uniform: gemm2 copies it (how people write one-GEMM configs).
  auto r = ObjectReader::open(j, at, {"gemm1", "gemm2"});
  if (!r.ok()) return r.error();
  MOETUNE_RETURN_IF_ERROR(r->optional("gemm1", &out->gemm1));
  if (!r->has("gemm2")) {
    out->gemm2 = out->gemm1;
    return Status::Ok();
  }
  return r->optional("gemm2", &out->gemm2);
}

Json to_json(Source const& s) {
  Json numbers = Json::object();
  for (auto const& [k, v] : s.numbers) numbers[k] = v;
  Json j = Json::object();
  if (!s.kind.empty()) j["kind"] = s.kind;  // a missing kind reads back; an empty one does not
  j["date"] = s.date;
  j["device"] = s.device;
  j["protocol"] = s.protocol;
  j["numbers"] = std::move(numbers);
  j["digest"] = s.digest;
  j["command"] = s.command;
  return j;
}

Status from_json(Json const& j, JsonAt const& at, Source* out) {
  auto r = ObjectReader::open(
      j, at, {"kind", "date", "device", "protocol", "numbers", "digest", "command"});
  if (!r.ok()) return r.error();
  MOETUNE_RETURN_IF_ERROR(r->optional("kind", &out->kind));
  if (r->has("kind")) {
    std::vector<std::string> kinds(std::begin(kSourceKinds), std::end(kSourceKinds));
    if (std::find(kinds.begin(), kinds.end(), out->kind) == kinds.end()) {
      return json_error(ErrorCode::kParse, at.field("kind"),
                        "unknown source kind '" + clip(out->kind) +
                            "'; expected one of measured, tuned, default, imported, e2e" +
                            did_you_mean(out->kind, kinds));
    }
  }
  MOETUNE_RETURN_IF_ERROR(r->optional("date", &out->date));
  MOETUNE_RETURN_IF_ERROR(r->optional("device", &out->device));
  MOETUNE_RETURN_IF_ERROR(r->optional("protocol", &out->protocol));
  MOETUNE_RETURN_IF_ERROR(r->optional("numbers", &out->numbers));
  MOETUNE_RETURN_IF_ERROR(r->optional("digest", &out->digest));
  return r->optional("command", &out->command);
}

Json to_json(RoutingProfile const& r) {
  return Json{{"kind", to_string(r.kind)},
              {"seed", r.seed},
              {"zipf_s", r.zipf_s},
              {"block", r.block},
              {"trace_path", r.trace_path}};
}

Status from_json(Json const& j, JsonAt const& at, RoutingProfile* out) {
  auto r = ObjectReader::open(j, at, {"kind", "seed", "zipf_s", "block", "trace_path"});
  if (!r.ok()) return r.error();
  MOETUNE_RETURN_IF_ERROR(r->optional("kind", &out->kind));
  MOETUNE_RETURN_IF_ERROR(r->optional("seed", &out->seed));
  MOETUNE_RETURN_IF_ERROR(r->optional("zipf_s", &out->zipf_s));
  MOETUNE_RETURN_IF_ERROR(r->optional("block", &out->block));
  MOETUNE_RETURN_IF_ERROR(r->optional("trace_path", &out->trace_path));
  // The CLI's check (parse_routing) and this reader's are one: routing.hpp's validate.
  if (Status st = validate(*out); !st.ok())
    return json_error(st.error().code, at, st.error().message);
  return Status::Ok();
}

Json to_json(ResolverPolicy const& p) {
  return Json{{"tiny_m_threshold", opt(p.tiny_m_threshold)},
              {"beyond_range_factor", opt(p.beyond_range_factor)}};
}

Status from_json(Json const& j, JsonAt const& at, ResolverPolicy* out) {
  auto r = ObjectReader::open(j, at, {"tiny_m_threshold", "beyond_range_factor"});
  if (!r.ok()) return r.error();
  MOETUNE_RETURN_IF_ERROR(r->optional("tiny_m_threshold", &out->tiny_m_threshold));
  return r->optional("beyond_range_factor", &out->beyond_range_factor);
}

Json to_json(TableKey const& k) {
  Json act = k.activation ? Json(to_string(*k.activation)) : Json(nullptr);
  Json block =
      k.block_shape ? Json::array({k.block_shape->first, k.block_shape->second}) : Json(nullptr);
  return Json{{"num_experts", k.num_experts},
              {"intermediate_size", k.intermediate_size},
              {"hidden_size", k.hidden_size},
              {"top_k", k.top_k},
              {"activation", act},
              {"dtype", to_string(k.dtype)},
              {"dtype_tag", k.dtype_tag},
              {"block_shape", block},
              {"device_name", k.device_name},
              {"family", k.family},
              {"family_version", k.family_version},
              {"toolchain", k.toolchain}};
}

Status from_json(Json const& j, JsonAt const& at, TableKey* out) {
  auto r = ObjectReader::open(
      j, at,
      {"num_experts", "intermediate_size", "hidden_size", "top_k", "activation", "dtype",
       "dtype_tag", "block_shape", "device_name", "family", "family_version", "toolchain"});
  if (!r.ok()) return r.error();
  MOETUNE_RETURN_IF_ERROR(r->optional("num_experts", &out->num_experts));
  MOETUNE_RETURN_IF_ERROR(r->optional("intermediate_size", &out->intermediate_size));
  MOETUNE_RETURN_IF_ERROR(r->optional("hidden_size", &out->hidden_size));
  MOETUNE_RETURN_IF_ERROR(r->optional("top_k", &out->top_k));
  MOETUNE_RETURN_IF_ERROR(r->optional("activation", &out->activation));
  MOETUNE_RETURN_IF_ERROR(r->optional("dtype", &out->dtype));
  MOETUNE_RETURN_IF_ERROR(r->optional("dtype_tag", &out->dtype_tag));
  MOETUNE_RETURN_IF_ERROR(r->optional("block_shape", &out->block_shape));
  MOETUNE_RETURN_IF_ERROR(r->optional("device_name", &out->device_name));
  MOETUNE_RETURN_IF_ERROR(r->optional("family", &out->family));
  MOETUNE_RETURN_IF_ERROR(r->optional("family_version", &out->family_version));
  return r->optional("toolchain", &out->toolchain);
}

namespace {

/// Engine fields held as JSON text, back as one object (a text that does not parse stays a
/// string, as format_vllm_table writes it).
Json engine_fields_json(std::map<std::string, std::string> const& fields) {
  Json out = Json::object();
  for (auto const& [name, text] : fields) {
    auto v = parse_json(text, "engine field");
    out[name] = v.ok() ? *v : Json(text);
  }
  return out;
}

}  // namespace

Json to_json(Resolution const& r) {
  return Json{{"m", r.m},
              {"key", opt(r.key)},
              {"rule", to_string(r.rule)},
              {"config", to_json(r.config)},
              {"source", r.source ? to_json(*r.source) : Json(nullptr)},
              {"explain", r.explain},
              {"engine_fields", engine_fields_json(r.engine_fields)},
              {"absent_fields", r.absent_fields}};
}

Status from_json(Json const& j, JsonAt const& at, Resolution* out) {
  auto r = ObjectReader::open(
      j, at, {"m", "key", "rule", "config", "source", "explain", "engine_fields", "absent_fields"});
  if (!r.ok()) return r.error();
  MOETUNE_RETURN_IF_ERROR(r->optional("m", &out->m));
  MOETUNE_RETURN_IF_ERROR(r->optional("key", &out->key));
  MOETUNE_RETURN_IF_ERROR(r->optional("rule", &out->rule));
  MOETUNE_RETURN_IF_ERROR(r->optional("config", &out->config));
  MOETUNE_RETURN_IF_ERROR(r->optional("source", &out->source));
  MOETUNE_RETURN_IF_ERROR(r->optional("explain", &out->explain));
  if (r->has("engine_fields")) {
    Json const& fields = j["engine_fields"];
    if (!fields.is_object()) {
      return json_error(ErrorCode::kParse, at.field("engine_fields"),
                        "expected an object, got " + describe_json(fields));
    }
    for (auto it = fields.begin(); it != fields.end(); ++it) {
      out->engine_fields[it.key()] = it.value().dump();
    }
  }
  if (r->has("absent_fields")) {
    Json const& absent = j["absent_fields"];
    JsonAt const absent_at = at.field("absent_fields");
    if (!absent.is_array()) {
      return json_error(ErrorCode::kParse, absent_at,
                        "expected an array, got " + describe_json(absent));
    }
    for (size_t i = 0; i < absent.size(); ++i) {
      std::string name;
      MOETUNE_RETURN_IF_ERROR(from_json(absent[i], absent_at.index(int64_t(i)), &name));
      out->absent_fields.push_back(std::move(name));
    }
  }
  return Status::Ok();
}

Json to_json(DeviceInfo const& d) {
  return Json{{"name", d.name},
              {"arch", d.arch},
              {"sm_count", d.sm_count},
              {"driver", d.driver},
              {"toolchain", d.toolchain},
              {"l2_bytes", d.l2_bytes},
              {"smem_per_block_bytes", d.smem_per_block_bytes}};
}

Status from_json(Json const& j, JsonAt const& at, DeviceInfo* out) {
  auto r = ObjectReader::open(
      j, at,
      {"name", "arch", "sm_count", "driver", "toolchain", "l2_bytes", "smem_per_block_bytes"});
  if (!r.ok()) return r.error();
  MOETUNE_RETURN_IF_ERROR(r->optional("name", &out->name));
  MOETUNE_RETURN_IF_ERROR(r->optional("arch", &out->arch));
  MOETUNE_RETURN_IF_ERROR(r->optional("sm_count", &out->sm_count));
  MOETUNE_RETURN_IF_ERROR(r->optional("driver", &out->driver));
  MOETUNE_RETURN_IF_ERROR(r->optional("toolchain", &out->toolchain));
  MOETUNE_RETURN_IF_ERROR(r->optional("l2_bytes", &out->l2_bytes));
  return r->optional("smem_per_block_bytes", &out->smem_per_block_bytes);
}

}  // namespace moetune::core
