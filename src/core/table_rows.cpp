// Reading and writing one row of either file of a table; see table_rows.hpp.
#include "core/table_rows.hpp"

#include <algorithm>
#include <charconv>
#include <string>

#include "core/names.hpp"

namespace moetune::core {

namespace {

/// Whether an unknown row field is a near miss of a field moetune models (a typo such as
/// "BLOCK_SIZE_MM"), not another kernel's parameter passed through.
std::string typo_of_known_field(std::string const& name) {
  std::vector<std::string> known(std::begin(kVllmFields), std::end(kVllmFields));
  known.push_back("SPLIT_K");
  return did_you_mean(name, known);
}

constexpr char const* kSharedSourceFields[] = {"kind", "date", "device", "protocol", "command"};

}  // namespace

int* vllm_field(KernelConfig& k, int i) {
  int* const fields[] = {&k.tile.block_m, &k.tile.block_n,       &k.tile.block_k,
                         &k.tile.group_m, &k.pipeline.num_warps, &k.pipeline.num_stages};
  return fields[i];
}

bool same_vllm_fields(KernelConfig a, KernelConfig b) {
  for (int i = 0; i < 6; ++i) {
    if (*vllm_field(a, i) != *vllm_field(b, i)) return false;
  }
  return a.pipeline.split_k == b.pipeline.split_k;
}

std::optional<int64_t> parse_row_key(std::string_view key) {
  int64_t m = 0;
  auto [ptr, ec] = std::from_chars(key.data(), key.data() + key.size(), m);
  if (ec != std::errc() || ptr != key.data() + key.size() || key.empty()) return std::nullopt;
  return m;
}

Status parse_vllm_row(Json const& j, JsonAt const& at, TableRow* row) {
  if (!j.is_object()) {
    return json_error(ErrorCode::kParse, at, "expected an object, got " + describe_json(j));
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    std::string const& name = it.key();
    if (name == "SPLIT_K" ||
        std::find(std::begin(kVllmFields), std::end(kVllmFields), name) != std::end(kVllmFields)) {
      continue;
    }
    if (std::string const typo = typo_of_known_field(name); !typo.empty()) {
      return json_error(ErrorCode::kParse, at,
                        "unknown field '" + clip(name) + "' looks like a misspelt engine field" +
                            typo + " (other fields, such as ROCm's kpack, are kept as they are)");
    }
    row->vllm_extra[name] = it.value().dump();
  }
  KernelConfig k;
  k.pipeline.num_warps = kTritonDefaultWarps;
  k.pipeline.num_stages = kTritonDefaultStages;
  for (int i = 0; i < 6; ++i) {
    if (!j.contains(kVllmFields[i])) {
      // The engines pass the row as the kernel's keyword arguments: the four tile fields are
      // kernel parameters it cannot run without; num_warps/num_stages have Triton's defaults.
      if (i >= 4) {
        row->absent_fields.push_back(kVllmFields[i]);
        continue;
      }
      return json_error(ErrorCode::kParse, at,
                        std::string("missing field '") + kVllmFields[i] +
                            "'; an engine row needs BLOCK_SIZE_M/N/K and GROUP_SIZE_M");
    }
    MOETUNE_RETURN_IF_ERROR(
        from_json(j[kVllmFields[i]], at.field(kVllmFields[i]), vllm_field(k, i)));
  }
  if (j.contains("SPLIT_K")) {
    MOETUNE_RETURN_IF_ERROR(from_json(j["SPLIT_K"], at.field("SPLIT_K"), &k.pipeline.split_k));
  }
  row->config = uniform_config(k);
  return Status::Ok();
}

Status parse_manifest_row(Json const& j, JsonAt const& at, ManifestRow* out) {
  auto r = ObjectReader::open(j, at, {"config", "source"});
  if (!r.ok()) return r.error();
  MOETUNE_RETURN_IF_ERROR(r->required("config", &out->row.config));
  auto const source = j.find("source");
  if (source == j.end() || !source->is_object() || !source->contains("index")) {
    return r->optional("source", &out->row.source);  // null, or a whole Source
  }
  // A source whose shared fields are an entry of "sources": the row holds its own measurement.
  JsonAt const source_at = at.field("source");
  auto s = ObjectReader::open(*source, source_at, {"index", "numbers", "digest"});
  if (!s.ok()) return s.error();
  int64_t index = 0;
  Source own;
  MOETUNE_RETURN_IF_ERROR(s->required("index", &index));
  MOETUNE_RETURN_IF_ERROR(s->optional("numbers", &own.numbers));
  MOETUNE_RETURN_IF_ERROR(s->optional("digest", &own.digest));
  out->row.source = std::move(own);
  out->source_index = index;
  return Status::Ok();
}

Status parse_manifest_sources(Json const& j, JsonAt const& at, std::vector<Source>* out) {
  if (!j.is_array()) {
    return json_error(ErrorCode::kParse, at, "expected an array, got " + describe_json(j));
  }
  out->clear();
  std::vector<std::string> const fields(std::begin(kSharedSourceFields),
                                        std::end(kSharedSourceFields));
  for (size_t i = 0; i < j.size(); ++i) {
    JsonAt const entry_at = at.index(static_cast<int64_t>(i));
    auto r = ObjectReader::open(j[i], entry_at, fields);  // numbers and digest are the rows'
    if (!r.ok()) return r.error();
    Source s;
    MOETUNE_RETURN_IF_ERROR(from_json(j[i], entry_at, &s));
    out->push_back(std::move(s));
  }
  return Status::Ok();
}

Status attach_source(ManifestRow* row, std::vector<Source> const& sources, JsonAt const& at) {
  if (!row->source_index) return Status::Ok();
  int64_t const index = *row->source_index;
  if (index < 0 || static_cast<size_t>(index) >= sources.size()) {
    return json_error(ErrorCode::kParse, at.field("source").field("index"),
                      std::to_string(index) + " names no entry of sources (it has " +
                          std::to_string(sources.size()) + "); regenerate the table with " +
                          "`moetune materialize` or the `moetune tune` that made it");
  }
  Source full = sources[static_cast<size_t>(index)];
  full.numbers = std::move(row->row.source->numbers);
  full.digest = std::move(row->row.source->digest);
  row->row.source = std::move(full);
  row->source_index.reset();
  return Status::Ok();
}

Json shared_source_json(Source const& s) {
  Json j = Json::object();
  if (!s.kind.empty()) j["kind"] = s.kind;  // a missing kind reads back; an empty one does not
  j["date"] = s.date;
  j["device"] = s.device;
  j["protocol"] = s.protocol;
  j["command"] = s.command;
  return j;
}

Json row_source_json(Source const& s, size_t index) {
  Json j{{"index", index}};
  if (!s.numbers.empty()) {
    Json numbers = Json::object();
    for (auto const& [name, value] : s.numbers) numbers.emplace(name, value);
    j["numbers"] = std::move(numbers);
  }
  if (!s.digest.empty()) j["digest"] = s.digest;
  return j;
}

}  // namespace moetune::core
