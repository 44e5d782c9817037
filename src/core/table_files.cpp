// The two files of a table: vLLM's config JSON (format fixed by vLLM's save_configs and
// get_moe_configs) and moetune's manifest sidecar, plus the checks that they agree.
#include <algorithm>
#include <filesystem>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/engine_rows.hpp"
#include "core/json_io.hpp"
#include "core/names.hpp"
#include "core/table.hpp"
#include "core/table_rows.hpp"

namespace moetune::core {

namespace {

constexpr char const* kRegenerate =
    "; the pair is out of step (an interrupted write, a rename or an edit): regenerate it with "
    "`moetune materialize` (or the `moetune tune` that made it) or delete the stale manifest";

}  // namespace

std::string manifest_path(std::string const& vllm_path) { return vllm_path + ".moetune"; }

Result<Table> parse_vllm_table(std::string_view text, std::string const& file) {
  std::string const base = std::filesystem::path(file).filename().string();
  if (size_t const at_backend = base.find(",backend="); at_backend != std::string::npos) {
    // vLLM 0.33 ships such files for another loader (its FlyDSL MoE, rows of tile_m/tile_n/...),
    // read by neither fused_moe's get_moe_configs nor SGLang.
    size_t const from = at_backend + 9;
    std::string const backend = base.substr(from, base.find_first_of(",.", from) - from);
    return make_error(ErrorCode::kParse, file,
                      "the name says backend=" + clip(backend) +
                          ": a config file of another MoE loader, not of the engines' Triton "
                          "fused_moe kernel; moetune reads only the latter's "
                          "E=..,N=..,device_name=...json files");
  }
  Table table;
  if (auto key = parse_vllm_file_name(base); key.ok()) table.key = *key;
  // Rows are read one at a time as the parser completes them (a 100k-row file never becomes one
  // tree). A row's error waits until the end: a later row under the same key replaces it, as
  // Python's json.load has it.
  std::vector<int64_t> file_order;
  std::vector<std::pair<int64_t, Error>> row_errors;
  auto on_member = [&](std::string const& key, Json& value, bool repeats) -> Status {
    auto const m = parse_row_key(key);
    if (!m.has_value()) {
      if (value.is_object()) {
        return json_error(
            ErrorCode::kParse, JsonAt{file, ""},
            "key '" + clip(key) + "' holds a row but is not a token count; keys are M as strings");
      }
      table.extra[key] = value.dump();
      return Status::Ok();
    }
    JsonAt const row_at{file, "\"" + clip(key) + "\""};
    if (*m < 1) return json_error(ErrorCode::kParse, row_at, "row key must be >= 1");
    if (repeats) {
      std::erase_if(row_errors, [&](auto const& e) { return e.first == *m; });
    } else if (table.rows.count(*m) != 0) {
      return json_error(ErrorCode::kParse, row_at, "row key appears twice");
    } else {
      file_order.push_back(*m);
    }
    TableRow row;
    if (Status const st = parse_vllm_row(value, row_at, &row); !st.ok()) {
      row_errors.emplace_back(*m, st.error());
    }
    table.rows[*m] = std::move(row);
    return Status::Ok();
  };
  auto j = parse_json_streamed(text, file, DuplicateKeys::kLastWins,  // json.load's rules
                               {}, on_member);
  if (!j.ok()) return j.error();
  if (!j->is_object()) {
    return json_error(ErrorCode::kParse, JsonAt{file, ""},
                      "expected an object of rows keyed by M, got " + describe_json(*j));
  }
  if (!row_errors.empty()) return row_errors.front().second;
  if (!std::is_sorted(file_order.begin(), file_order.end())) table.key_order = file_order;
  return table;
}

std::string format_vllm_table(Table const& table) {
  Json j = Json::object();
  for (auto const& [name, text] : table.extra) {
    auto v = parse_json(text, "extra");
    j[name] = v.ok() ? *v : Json(text);
  }
  for (int64_t const m : keys_in_file_order(table)) {
    TableRow const& row = table.rows.at(m);
    Json r = Json::object();
    KernelConfig k = row.config.gemm1;
    for (int i = 0; i < 6; ++i) {
      auto const& absent = row.absent_fields;
      if (std::find(absent.begin(), absent.end(), kVllmFields[i]) != absent.end()) continue;
      r[kVllmFields[i]] = *vllm_field(k, i);
    }
    if (k.pipeline.split_k != 1) r["SPLIT_K"] = k.pipeline.split_k;
    for (auto const& [name, text] : row.vllm_extra) {
      auto v = parse_json(text, "extra");
      r[name] = v.ok() ? *v : Json(text);
    }
    // Appended without ordered_map's search of every earlier key (quadratic in the rows): a row
    // key is an integer, so it is neither an extra's name nor another row's.
    j.get_ref<Json::object_t&>().Container::emplace_back(std::to_string(m), std::move(r));
  }
  return print_json(j, 4);
}

namespace {

/// `j` on one line.
std::string compact(Json const& j) {
  std::string text = print_json(j, -1);
  text.pop_back();  // print_json's newline
  return text;
}

}  // namespace

std::string format_manifest(Table const& table) {
  // One line per source and per row, nothing indented: a 100k-row manifest stays a few times
  // its rows file, and a reader finds each row without parsing the others. A source's fields
  // other than its numbers and digest are the same for every row one run tuned, so they are
  // written once under "sources" and each row names its entry.
  std::string sources, rows;
  std::unordered_map<std::string, size_t> source_index;
  for (auto const& [m, row] : table.rows) {
    Json source(nullptr);
    if (row.source) {
      std::string shared = compact(shared_source_json(*row.source));
      auto [it, added] = source_index.emplace(std::move(shared), source_index.size());
      if (added) sources += (sources.empty() ? "\n" : ",\n") + it->first;
      source = row_source_json(*row.source, it->second);
    }
    rows += (rows.empty() ? "\n" : ",\n") + compact(Json(std::to_string(m))) + ":" +
            compact(Json{{"config", to_json(row.config)}, {"source", std::move(source)}});
  }
  return "{\"manifest_version\":" + std::to_string(kManifestVersion) +
         ",\n\"key\":" + compact(to_json(table.key)) +
         ",\n\"policy\":" + compact(to_json(table.policy)) + ",\n\"sources\":[" + sources +
         (sources.empty() ? "]" : "\n]") + ",\n\"rows\":{" + rows +
         (rows.empty() ? "}}\n" : "\n}}\n");
}

namespace {

/// A manifest's rows, taken one at a time as the streamed parser completes them (parse_manifest).
/// The first row error is held, not returned, until the top level has been checked.
struct ManifestRows {
  Table* table;
  JsonAt rows_at;
  std::optional<Error> error = {};
  std::vector<std::pair<int64_t, int64_t>> source_index = {};  // (M, index) of rows naming a source

  void take(std::string const& key, Json& value) {
    if (error) return;
    auto const m = parse_row_key(key);
    if (!m.has_value() || *m < 1) {
      error = json_error(ErrorCode::kParse, rows_at,
                         "key '" + clip(key) + "' is not a token count >= 1");
      return;
    }
    if (table->rows.count(*m) != 0) {  // "016" after "16": one row written twice
      error = json_error(
          ErrorCode::kParse, rows_at,
          "key '" + clip(key) + "' is M=" + std::to_string(*m) + " again; keep one row per M");
      return;
    }
    ManifestRow row;
    if (Status const st = parse_manifest_row(value, rows_at.index(*m), &row); !st.ok()) {
      error = st.error();
      return;
    }
    if (row.source_index) source_index.emplace_back(*m, *row.source_index);
    table->rows[*m] = std::move(row.row);
  }
};

/// A manifest's top level (the rows aside): the version first, since a newer manifest may hold
/// fields this build does not know and the error to give is that it is newer; then key, policy,
/// sources and that "rows" is an object.
Status parse_manifest_top(Json& j, JsonAt const& at, std::string const& file, Table* table,
                          std::vector<Source>* sources) {
  int version = 0;
  if (j.is_object() && j.contains("manifest_version")) {
    MOETUNE_RETURN_IF_ERROR(
        from_json(j["manifest_version"], at.field("manifest_version"), &version));
  }
  auto r = ObjectReader::open(j, at, {"manifest_version", "key", "policy", "sources", "rows"});
  if (!r.ok() && version <= kManifestVersion) return r.error();
  if (r.ok() && !r->has("manifest_version")) return r->missing("manifest_version");
  if (version < kOldestManifestVersion || version > kManifestVersion) {
    return make_error(ErrorCode::kVersion, file,
                      "manifest_version " + std::to_string(version) + " is not readable by this " +
                          "build (reads " + std::to_string(kOldestManifestVersion) + ".." +
                          std::to_string(kManifestVersion) +
                          "); regenerate it with `moetune materialize` or update moetune");
  }
  if (version < 2 && r->has("sources")) {
    return json_error(ErrorCode::kParse, at,
                      "field 'sources' is new in manifest_version 2, but this file says " +
                          std::to_string(version) + "; set manifest_version to 2");
  }
  MOETUNE_RETURN_IF_ERROR(r->required("key", &table->key));
  MOETUNE_RETURN_IF_ERROR(r->optional("policy", &table->policy));
  if (r->has("sources")) {
    MOETUNE_RETURN_IF_ERROR(parse_manifest_sources(j["sources"], at.field("sources"), sources));
  }
  if (!r->has("rows")) return r->missing("rows");
  if (!j["rows"].is_object()) {
    return json_error(ErrorCode::kParse, at.field("rows"),
                      "expected an object, got " + describe_json(j["rows"]));
  }
  return Status::Ok();
}

}  // namespace

Result<Table> parse_manifest(std::string_view text, std::string const& file) {
  // Rows are read one at a time as the parser completes them, so a 100k-row manifest never
  // becomes one tree. The first row error waits until the top level (version, key, sources) is
  // checked, which a too-new manifest must fail first; so do the rows that name a source, since
  // "sources" may follow "rows" in a file written by hand.
  Table table;
  table.has_manifest = true;
  JsonAt const at{file, ""};
  ManifestRows rows{.table = &table, .rows_at = at.field("rows")};
  auto on_row = [&rows](std::string const& key, Json& value, bool) -> Status {
    rows.take(key, value);
    return Status::Ok();
  };
  auto j = parse_json_streamed(text, file, DuplicateKeys::kError, {"rows"}, on_row);
  if (!j.ok()) return j.error();
  std::vector<Source> sources;
  MOETUNE_RETURN_IF_ERROR(parse_manifest_top(*j, at, file, &table, &sources));
  if (rows.error) return *rows.error;
  for (auto const& [m, index] : rows.source_index) {
    ManifestRow row{std::move(table.rows[m]), index};
    MOETUNE_RETURN_IF_ERROR(attach_source(&row, sources, rows.rows_at.index(m)));
    table.rows[m] = std::move(row.row);
  }
  return table;
}

namespace {

/// Where a manifest's key and the vLLM file's name disagree: "key.<field> is X in the manifest
/// but Y in the file name '...'" for the first field that differs ("key" where the name does not
/// parse).
std::string key_mismatch(TableKey const& a, std::string const& expected_name,
                         std::string const& vllm_file_name) {
  auto named = parse_vllm_file_name(vllm_file_name);
  std::string field = "key", seen = expected_name, want = vllm_file_name;
  if (named.ok()) {
    TableKey const& b = *named;
    auto set = [&](char const* f, std::string x, std::string y) {
      if (field == "key" && x != y) field = std::string("key.") + f, seen = x, want = y;
    };
    set("num_experts", std::to_string(a.num_experts), std::to_string(b.num_experts));
    set("intermediate_size", std::to_string(a.intermediate_size),
        std::to_string(b.intermediate_size));
    set("device_name", a.device_name, b.device_name);
    set("dtype", std::string(to_string(a.dtype)), std::string(to_string(b.dtype)));
    set("dtype_tag", a.dtype_tag, b.dtype_tag);
    auto shape = [](TableKey const& k) {
      return k.block_shape ? "[" + std::to_string(k.block_shape->first) + "," +
                                 std::to_string(k.block_shape->second) + "]"
                           : std::string("none");
    };
    set("block_shape", shape(a), shape(b));
    // The name carries the family only for our own families (table_file_name).
    if (!is_engine_family(a.family) || !is_engine_family(b.family)) {
      set("family", a.family, b.family);
    }
  }
  return field + " is " + seen + " in the manifest but " + want + " in the file name '" +
         vllm_file_name + "'";
}

/// The vLLM fields (and split_k) of row M where the manifest and the vLLM file differ.
void row_field_mismatches(int64_t m, KernelConfig a, KernelConfig b,
                          std::function<void(std::string)> const& add) {
  for (int i = 0; i < 7; ++i) {
    int const va = i < 6 ? *vllm_field(a, i) : a.pipeline.split_k;
    int const vb = i < 6 ? *vllm_field(b, i) : b.pipeline.split_k;
    if (va == vb) continue;
    add("rows[" + std::to_string(m) + "].config.gemm1." +
        (i < 6 ? kVllmFieldPaths[i] : "pipeline.split_k") + " is " + std::to_string(va) +
        " in the manifest but " + std::to_string(vb) + " in the vLLM file");
  }
}

}  // namespace

std::vector<Error> manifest_mismatches(Table const& manifest, Table const& vllm,
                                       std::string const& vllm_file_name,
                                       std::string const& manifest_file) {
  std::vector<Error> out;
  auto add = [&](std::string message) {
    out.push_back(make_error(ErrorCode::kMismatch, manifest_file, message + kRegenerate));
  };
  std::string const expected_name = table_file_name(manifest.key);
  if (expected_name != vllm_file_name) {
    add(key_mismatch(manifest.key, expected_name, vllm_file_name));
  }
  for (auto const& [m, row] : manifest.rows) {
    if (vllm.rows.count(m) == 0) {
      add("rows[" + std::to_string(m) + "] is in the manifest but not in the vLLM file");
    }
  }
  for (auto const& [m, row] : vllm.rows) {
    if (manifest.rows.count(m) == 0) {
      add("rows[" + std::to_string(m) + "] is in the vLLM file but not in the manifest");
    }
  }
  for (auto const& [m, row] : manifest.rows) {
    auto it = vllm.rows.find(m);
    if (it != vllm.rows.end())
      row_field_mismatches(m, row.config.gemm1, it->second.config.gemm1, add);
  }
  return out;
}

}  // namespace moetune::core
