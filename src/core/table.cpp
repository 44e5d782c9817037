// Table keys and names (vLLM's get_config_file_name rule), key checks, and loading/saving the
// vLLM file + manifest pair.
#include "core/table.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <set>

#include "core/atomic_file.hpp"
#include "core/engine_rows.hpp"
#include "core/names.hpp"

namespace moetune::core {

namespace {

Result<int64_t> parse_int_field(std::string_view text, std::string const& file, char const* field) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty() || v < 1) {
    return make_error(ErrorCode::kParse, file,
                      std::string(field) + "='" + std::string(text) +
                          "' is not a positive integer; expected "
                          "E={E},N={N},device_name={dev}[,dtype=..][,block_shape=[bn,bk]].json");
  }
  return v;
}

}  // namespace

std::string vllm_device_name(std::string_view device_name) {
  // vLLM's name is a Python str, always valid Unicode: a byte that is not UTF-8 (a driver's or an
  // environment's 0xFF) or a control byte becomes '_' too, so the file name and the manifest's
  // key (JSON, UTF-8) spell the same device.
  std::string name;
  for (size_t i = 0; i < device_name.size();) {
    size_t const n = utf8_length(device_name, i);
    bool const control = n == 1 && (static_cast<unsigned char>(device_name[i]) < 0x20 ||
                                    device_name[i] == 0x7F || device_name[i] == '/');
    name += n == 0 || control ? std::string("_") : std::string(device_name.substr(i, n));
    i += n == 0 ? 1 : n;
  }
  std::replace(name.begin(), name.end(), ' ', '_');
  size_t start = 0;
  while (start <= name.size()) {
    size_t const end = std::min(name.find('_', start), name.size());
    if (name.compare(start, end - start, "H200") == 0) return "NVIDIA_H200";
    start = end + 1;
  }
  return name;
}

std::string vllm_file_name(TableKey const& key) {
  std::string name = "E=" + std::to_string(key.num_experts) +
                     ",N=" + std::to_string(key.intermediate_size) +
                     ",device_name=" + key.device_name;
  if (!key.dtype_tag.empty()) {
    name += ",dtype=" + key.dtype_tag;
  } else if (key.dtype == DType::kFp32) {
    name += ",dtype=float32";
  }
  if (key.block_shape.has_value()) {
    name += ",block_shape=[" + std::to_string(key.block_shape->first) + "," +
            std::to_string(key.block_shape->second) + "]";
  }
  return name + ".json";
}

namespace {

/// The next item of a vLLM file name's body, split on ',' outside brackets (block_shape=[bn,bk]
/// holds one); `body` moves past it.
std::string_view next_name_item(std::string_view& body) {
  size_t end = 0;
  int depth = 0;
  for (; end < body.size(); ++end) {
    if (body[end] == '[') ++depth;
    if (body[end] == ']') --depth;
    if (body[end] == ',' && depth == 0) break;
  }
  std::string_view const item = body.substr(0, end);
  body = end < body.size() ? body.substr(end + 1) : "";
  return item;
}

/// block_shape=[bn,bk] of an fp8 block-quantised table.
Result<std::pair<int, int>> parse_block_shape(std::string_view value, std::string const& file) {
  size_t const comma = value.find(',');
  if (value.size() < 5 || value.front() != '[' || value.back() != ']' ||
      comma == std::string_view::npos) {
    return make_error(ErrorCode::kParse, file,
                      "block_shape='" + std::string(value) + "'; expected [bn,bk]");
  }
  auto bn = parse_int_field(value.substr(1, comma - 1), file, "block_shape[0]");
  if (!bn.ok()) return bn.error();
  auto bk =
      parse_int_field(value.substr(comma + 1, value.size() - comma - 2), file, "block_shape[1]");
  if (!bk.ok()) return bk.error();
  return std::make_pair(static_cast<int>(*bn), static_cast<int>(*bk));
}

}  // namespace

Result<TableKey> parse_vllm_file_name(std::string_view file_name) {
  std::string const file(file_name);
  constexpr std::string_view kExt = ".json";
  if (file_name.size() <= kExt.size() || !file_name.ends_with(kExt)) {
    return make_error(ErrorCode::kParse, file, "a vLLM table file name ends in .json");
  }
  std::string_view body = file_name.substr(0, file_name.size() - kExt.size());
  TableKey key;
  bool seen_e = false, seen_n = false, seen_dev = false;
  while (!body.empty()) {
    std::string_view const item = next_name_item(body);
    size_t const eq = item.find('=');
    std::string_view const name = item.substr(0, eq);
    std::string_view const value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    if (name == "E") {
      auto v = parse_int_field(value, file, "E");
      if (!v.ok()) return v.error();
      key.num_experts = *v, seen_e = true;
    } else if (name == "N") {
      auto v = parse_int_field(value, file, "N");
      if (!v.ok()) return v.error();
      key.intermediate_size = *v, seen_n = true;
    } else if (name == "device_name") {
      key.device_name = std::string(value), seen_dev = true;
    } else if (name == "dtype") {
      if (value == "float32") {
        key.dtype = DType::kFp32;
      } else {
        key.dtype_tag = std::string(value);
      }
    } else if (name == "block_shape") {
      auto shape = parse_block_shape(value, file);
      if (!shape.ok()) return shape.error();
      key.block_shape = *shape;
    } else if (name == "family" && !value.empty()) {
      key.family = std::string(value);  // one of our own families (table_file_name)
    } else {
      return make_error(ErrorCode::kParse, file,
                        "unknown name item '" + std::string(item) +
                            "'; expected E=, N=, device_name=, dtype=, block_shape= or family=");
    }
  }
  if (!seen_e || !seen_n || !seen_dev) {
    return make_error(ErrorCode::kParse, file,
                      "missing E=, N= or device_name=; expected "
                      "E={E},N={N},device_name={dev}[,dtype=..][,block_shape=[bn,bk]].json");
  }
  return key;
}

Status check_key_matches(TableKey const& key, MoeProblem const& problem,
                         std::string_view table_name) {
  std::string const where = "table " + std::string(table_name);
  auto differ = [&](std::string const& field, std::string const& in_table,
                    std::string const& in_problem, std::string const& hint) {
    return make_error(ErrorCode::kMismatch, where,
                      field + " is " + in_table + " in the table but " + in_problem +
                          " in the problem; use a table tuned for " + hint +
                          " or run `moetune tune`");
  };
  if (key.num_experts != problem.num_experts) {
    return differ("num_experts (E)", std::to_string(key.num_experts),
                  std::to_string(problem.num_experts), "E=" + std::to_string(problem.num_experts));
  }
  if (key.intermediate_size != problem.intermediate_size) {
    return differ("intermediate_size (N)", std::to_string(key.intermediate_size),
                  std::to_string(problem.intermediate_size),
                  "N=" + std::to_string(problem.intermediate_size));
  }
  if (key.hidden_size != 0 && key.hidden_size != problem.hidden_size) {
    return differ("hidden_size (K)", std::to_string(key.hidden_size),
                  std::to_string(problem.hidden_size), "K=" + std::to_string(problem.hidden_size));
  }
  if (key.top_k != 0 && key.top_k != problem.top_k) {
    return differ("top_k", std::to_string(key.top_k), std::to_string(problem.top_k),
                  "top_k=" + std::to_string(problem.top_k));
  }
  if (key.activation.has_value() && *key.activation != problem.activation) {
    std::string const want(to_string(problem.activation));
    return differ("activation", std::string(to_string(*key.activation)), want, "act=" + want);
  }
  std::string const want_dtype(to_string(problem.dtype));
  if (problem.quant != Quant::kNone) {  // the engines' fp8 names: dtype=fp8_w8a8[,block_shape]
    bool const block = problem.quant == Quant::kFp8Block;
    std::string const want = std::string("fp8_w8a8") + (block ? ",block_shape=[128,128]" : "");
    std::string const seen =
        (key.dtype_tag.empty() ? want_dtype : key.dtype_tag) +
        (key.block_shape ? ",block_shape=[" + std::to_string(key.block_shape->first) + "," +
                               std::to_string(key.block_shape->second) + "]"
                         : "");
    if (seen != want) return differ("dtype", seen, want, "dtype=" + want);
    return Status::Ok();
  }
  if (!key.dtype_tag.empty()) {
    return differ("dtype", key.dtype_tag, want_dtype, "dtype=" + want_dtype);
  }
  // vLLM names bf16 and fp16 tables alike, so a plain vLLM file (family unknown) serves both.
  bool const half_pair =
      key.family.empty() && key.dtype != DType::kFp32 && problem.dtype != DType::kFp32;
  if (key.dtype != problem.dtype && !half_pair) {
    return differ("dtype", std::string(to_string(key.dtype)), want_dtype, "dtype=" + want_dtype);
  }
  return Status::Ok();
}

Result<Table> load_table(std::string const& path) {
  Result<Table> table = [&]() -> Result<Table> {  // the text is freed before the manifest is read
    auto text = read_file(path);
    if (!text.ok()) return text.error();
    return parse_vllm_table(*text, path);
  }();
  if (!table.ok()) return table.error();
  std::string const mpath = manifest_path(path);
  auto mtext = read_file(mpath);
  if (!mtext.ok()) {
    if (mtext.error().code == ErrorCode::kNotFound) return table;  // a plain vLLM file
    return mtext.error();
  }
  auto manifest = parse_manifest(*mtext, mpath);
  *mtext = std::string();
  if (!manifest.ok()) return manifest.error();
  std::string const base = std::filesystem::path(path).filename().string();
  auto mismatches = manifest_mismatches(*manifest, *table, base, mpath);
  if (!mismatches.empty()) return mismatches.front();
  // The manifest is the fuller record; keep vLLM's extras (top level and per row) from the file.
  Table out = std::move(*manifest);
  out.extra = table->extra;
  out.key_order = table->key_order;
  for (auto& [m, row] : out.rows) {
    TableRow& from = table->rows.at(m);
    row.vllm_extra = std::move(from.vllm_extra);
    row.absent_fields = std::move(from.absent_fields);
  }
  return out;
}

std::vector<int64_t> keys_in_file_order(Table const& table) {
  std::vector<int64_t> out;
  out.reserve(table.rows.size());
  std::set<int64_t> seen;
  for (int64_t const m : table.key_order) {
    if (table.rows.count(m) != 0 && seen.insert(m).second) out.push_back(m);
  }
  for (auto const& [m, row] : table.rows) {
    if (seen.count(m) == 0) out.push_back(m);
  }
  return out;
}

Result<std::string> stage_table(Table const& table, std::string const& dir, FileTransaction& tx) {
  MOETUNE_RETURN_IF_ERROR(ensure_writable_dir(dir));
  std::string const path = (std::filesystem::path(dir) / table_file_name(table.key)).string();
  // An engine-format file is one the engine will load and run: every row must fit its kernel.
  if (!table.key.family.empty() && is_engine_family(table.key.family)) {
    MOETUNE_RETURN_IF_ERROR(check_engine_rows(table, path));
  }
  std::string const mpath = manifest_path(path);
  if (table.has_manifest) {
    MOETUNE_RETURN_IF_ERROR(tx.stage(mpath, format_manifest(table)));
  } else {
    tx.stage_removal(mpath);  // a plain table must not pick up a stale manifest left beside it
  }
  MOETUNE_RETURN_IF_ERROR(tx.stage(path, format_vllm_table(table)));
  return path;
}

Result<std::string> save_table(Table const& table, std::string const& dir) {
  FileTransaction tx;
  auto path = stage_table(table, dir, tx);
  if (!path.ok()) return path.error();
  MOETUNE_RETURN_IF_ERROR(tx.commit());
  return path;
}

Result<std::vector<std::string>> list_table_files(std::string const& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status const status = fs::status(dir, ec);
  if (status.type() == fs::file_type::not_found) {
    return make_error(ErrorCode::kNotFound, dir, "table directory not found");
  }
  if (!fs::is_directory(status)) {
    // Kept apart from "not found": the path is there, but it is a table (or another file), and
    // a caller that falls back on a missing directory must not do so on this.
    std::string const parent = fs::path(dir).parent_path().string();
    return make_error(ErrorCode::kInvalidArgument, dir,
                      ec ? "cannot read: " + ec.message() + "; expected a directory of tables"
                         : "is a file, not a directory: a tables directory holds the "
                           "E=..,N=..,device_name=...json files; give the directory that holds "
                           "them (" +
                               (parent.empty() ? std::string(".") : parent) + ")");
  }
  std::vector<std::string> out;
  // error_code overloads throughout: a symlink loop or a vanished entry is a message, not an
  // exception. An entry whose status cannot be read stays in the list, so reading it names it.
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string const name = it->path().filename().string();
    std::error_code status_ec;
    if (!name.ends_with(".json") || name.front() == '.' || it->is_directory(status_ec)) continue;
    out.push_back(it->path().string());
  }
  if (ec) return make_error(ErrorCode::kIo, dir, "cannot list directory: " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace moetune::core
