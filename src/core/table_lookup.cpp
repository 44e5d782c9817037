// TableLookup: a scan for the keys, one row parsed per lookup; see table_lookup.hpp.
#include "core/table_lookup.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <numeric>

#include "core/json_scan.hpp"
#include "core/table_rows.hpp"

namespace moetune::core {

namespace {

/// M when `key` is a row key as moetune and the engines write it (decimal, no sign, no leading
/// zero, >= 1); other spellings are load_table's to judge.
std::optional<int64_t> canonical_row_key(std::string_view key) {
  auto const m = parse_row_key(key);
  if (!m || *m < 1 || std::to_string(*m) != key) return std::nullopt;
  return m;
}

/// A regular file opened for reading, or -1 (`missing`: it does not exist).
int open_regular(std::string const& path, bool* missing) {
  int const fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  *missing = fd < 0 && errno == ENOENT;
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// The `bytes` bytes at `offset` of the file; none on a read error or a short file.
std::optional<std::string> read_at(int fd, uint64_t offset, uint64_t bytes) {
  std::string text(static_cast<size_t>(bytes), '\0');
  size_t done = 0;
  while (done < text.size()) {
    ssize_t const got =
        ::pread(fd, text.data() + done, text.size() - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return std::nullopt;
    done += static_cast<size_t>(got);
  }
  return text;
}

/// Parses `text` (one member's value) into `out` as the whole-file reader would.
template <class T>
bool read_value(std::string const& text, JsonAt const& at, T* out) {
  auto j = parse_json(text, at.file);
  return j.ok() && from_json(*j, at, out).ok();
}

}  // namespace

TableLookup::File& TableLookup::File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

TableLookup::File::~File() {
  if (fd_ >= 0) ::close(fd_);
}

Result<TableLookup> TableLookup::open(std::string const& path) {
  TableLookup lookup;
  lookup.path_ = path;
  if (!lookup.scan()) MOETUNE_RETURN_IF_ERROR(lookup.load_whole());
  return lookup;
}

bool TableLookup::scan() {
  std::string const base = std::filesystem::path(path_).filename().string();
  if (base.find(",backend=") != std::string::npos) return false;  // another loader's file
  if (auto key = parse_vllm_file_name(base); key.ok()) head_.key = *key;
  return scan_vllm() && scan_manifest();
}

bool TableLookup::scan_vllm() {
  bool missing = false;
  vllm_file_ = File(open_regular(path_, &missing));
  if (vllm_file_.get() < 0) return false;
  std::vector<RowPlace> in_file;  // file order, a repeated key each time
  auto on_member = [&](JsonFileMember const& m) {
    if (m.key_escaped) return false;
    if (!parse_row_key(m.key)) {
      // A top-level value vLLM writes (triton_version), kept as JSON text; an object here is a
      // row under a key that is not a token count, which load_table refuses.
      if (m.value.front() == '{') return false;
      auto v = parse_json(m.value, path_, DuplicateKeys::kLastWins);
      if (!v.ok()) return false;
      head_.extra[std::string(m.key)] = v->dump();
      return true;
    }
    auto const key = canonical_row_key(m.key);
    if (!key || m.value.front() != '{') return false;
    in_file.push_back(RowPlace{*key, m.offset, m.value.size()});
    return true;
  };
  if (!scan_json_file(vllm_file_.get(), "", nullptr, on_member)) return false;
  // A key given twice: the later row wins, in the earlier one's place, as Python's json.load has
  // it (and parse_vllm_table).
  std::vector<size_t> by_m(in_file.size());
  std::iota(by_m.begin(), by_m.end(), size_t{0});
  std::stable_sort(by_m.begin(), by_m.end(),
                   [&](size_t a, size_t b) { return in_file[a].m < in_file[b].m; });
  std::vector<bool> first(in_file.size(), false);
  for (size_t i = 0; i < by_m.size();) {
    size_t last = i;
    while (last + 1 < by_m.size() && in_file[by_m[last + 1]].m == in_file[by_m[i]].m) ++last;
    first[by_m[i]] = true;
    vllm_rows_.push_back(in_file[by_m[last]]);
    keys_.push_back(in_file[by_m[i]].m);
    i = last + 1;
  }
  std::vector<int64_t> file_order;
  for (size_t i = 0; i < in_file.size(); ++i) {
    if (first[i]) file_order.push_back(in_file[i].m);
  }
  if (!std::is_sorted(file_order.begin(), file_order.end())) head_.key_order = file_order;
  return true;
}

bool TableLookup::scan_manifest() {
  std::string const mpath = manifest_path(path_);
  bool missing = false;
  manifest_file_ = File(open_regular(mpath, &missing));
  if (manifest_file_.get() < 0) return missing;  // none: a plain vLLM file
  std::map<std::string, std::string> top;        // the root's members but "rows", as JSON text
  auto on_member = [&](JsonFileMember const& m) {
    return !m.key_escaped && top.emplace(std::string(m.key), std::string(m.value)).second;
  };
  auto on_row = [&](JsonFileMember const& m) {
    auto const key = m.key_escaped ? std::nullopt : canonical_row_key(m.key);
    if (!key || m.value.front() != '{') return false;
    manifest_rows_.push_back(RowPlace{*key, m.offset, m.value.size()});
    return true;
  };
  if (!scan_json_file(manifest_file_.get(), "rows", on_member, on_row)) return false;
  for (auto const& [name, text] : top) {
    if (name != "manifest_version" && name != "key" && name != "policy" && name != "sources") {
      return false;
    }
  }
  JsonAt const at{mpath, ""};
  int version = 0;
  Table manifest;
  if (top.count("manifest_version") == 0 || top.count("key") == 0 ||
      !read_value(top["manifest_version"], at.field("manifest_version"), &version) ||
      version < kOldestManifestVersion || version > kManifestVersion ||
      (version < 2 && top.count("sources") != 0) ||
      !read_value(top["key"], at.field("key"), &manifest.key) ||
      (top.count("policy") != 0 && !read_value(top["policy"], at.field("policy"), &head_.policy))) {
    return false;
  }
  if (top.count("sources") != 0) {
    auto j = parse_json(top["sources"], mpath);
    if (!j.ok() || !parse_manifest_sources(*j, at.field("sources"), &sources_).ok()) return false;
  }
  // Both files must hold the same keys, and the manifest's key must be the file name's.
  std::stable_sort(manifest_rows_.begin(), manifest_rows_.end(),
                   [](RowPlace const& a, RowPlace const& b) { return a.m < b.m; });
  if (manifest_rows_.size() != keys_.size()) return false;
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (manifest_rows_[i].m != keys_[i]) return false;  // also a key given twice
  }
  std::string const base = std::filesystem::path(path_).filename().string();
  if (!manifest_mismatches(manifest, head_, base, mpath).empty()) return false;
  head_.key = manifest.key;
  head_.has_manifest = true;
  return true;
}

Status TableLookup::load_whole() {
  auto table = load_table(path_);
  if (!table.ok()) return table.error();
  vllm_file_ = File();
  manifest_file_ = File();
  vllm_rows_.clear();
  manifest_rows_.clear();
  sources_.clear();
  rows_ = std::move(table->rows);
  head_ = std::move(*table);
  head_.rows.clear();
  keys_.clear();
  for (auto const& [m, row] : rows_) keys_.push_back(m);
  whole_ = true;
  return Status::Ok();
}

std::optional<TableRow> TableLookup::read_row(int64_t m) const {
  auto place = [m](std::vector<RowPlace> const& places) -> RowPlace const* {
    auto it = std::lower_bound(places.begin(), places.end(), m,
                               [](RowPlace const& p, int64_t key) { return p.m < key; });
    return it != places.end() && it->m == m ? &*it : nullptr;
  };
  RowPlace const* in_vllm = place(vllm_rows_);
  if (in_vllm == nullptr) return std::nullopt;
  auto text = read_at(vllm_file_.get(), in_vllm->offset, in_vllm->bytes);
  auto j = text ? parse_json(*text, path_, DuplicateKeys::kLastWins) : Result<Json>(Error{});
  TableRow from_vllm;
  if (!j.ok() ||
      !parse_vllm_row(*j, JsonAt{path_, "\"" + std::to_string(m) + "\""}, &from_vllm).ok()) {
    return std::nullopt;
  }
  if (!head_.has_manifest) return from_vllm;
  std::string const mpath = manifest_path(path_);
  RowPlace const* in_manifest = place(manifest_rows_);
  if (in_manifest == nullptr) return std::nullopt;
  text = read_at(manifest_file_.get(), in_manifest->offset, in_manifest->bytes);
  j = text ? parse_json(*text, mpath) : Result<Json>(Error{});
  JsonAt const row_at = JsonAt{mpath, ""}.field("rows").index(m);
  ManifestRow row;
  if (!j.ok() || !parse_manifest_row(*j, row_at, &row).ok() ||
      !attach_source(&row, sources_, row_at).ok() ||
      !same_vllm_fields(row.row.config.gemm1, from_vllm.config.gemm1)) {
    return std::nullopt;
  }
  row.row.vllm_extra = std::move(from_vllm.vllm_extra);
  row.row.absent_fields = std::move(from_vllm.absent_fields);
  return std::move(row.row);
}

Result<TableRow> TableLookup::row(int64_t m) {
  if (!whole_ && std::binary_search(keys_.begin(), keys_.end(), m)) {
    if (auto row = read_row(m)) return *std::move(row);
    // Something about the row is wrong: load_table names it (or reads the table after all).
    MOETUNE_RETURN_IF_ERROR(load_whole());
  }
  auto it = rows_.find(m);
  if (it == rows_.end()) {
    return make_error(ErrorCode::kNotFound, path_, "no row with key " + std::to_string(m));
  }
  return it->second;
}

}  // namespace moetune::core
