// KnobCache file format, scope selection and the locked merge-on-write; see knob_cache.hpp.
#include "runtime/knob_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>

#include "core/atomic_file.hpp"
#include "core/flat_json.hpp"
#include "core/json_text.hpp"
#include "core/names.hpp"

namespace moetune::runtime {
namespace {

using core::FlatJson;
using core::json_string;

core::Error parse_error(std::string const& where, std::string message) {
  return core::make_error(core::ErrorCode::kParse, where, std::move(message));
}

std::string format_scope(CacheScope const& s) {
  return "{\"device_name\": " + json_string(s.device_name) +
         ", \"sm_count\": " + std::to_string(s.sm_count) +
         ", \"driver\": " + json_string(s.driver) + ", \"toolchain\": " + json_string(s.toolchain) +
         ", \"family\": " + json_string(s.family) +
         ", \"family_version\": " + std::to_string(s.family_version) +
         ", \"problem\": " + json_string(s.problem) + ", \"routing\": " + json_string(s.routing) +
         "}";
}

/// An integer field in [0, hi]. The range is checked on the double before converting: casting
/// 1e300 to an integer is undefined behaviour (the fuzz target found it, tests/fuzz/).
core::Result<int64_t> integer(FlatJson const& j, std::string const& key, std::string const& where,
                              int64_t hi = std::numeric_limits<int32_t>::max()) {
  auto v = j.number(key);
  if (!v.ok()) return v.error();
  if (!(*v >= 0 && *v <= static_cast<double>(hi)) || *v != std::floor(*v)) {
    return parse_error(where, "'" + key + "' is " + core::clip(j.raw(key)) +
                                  "; expected an integer in [0, " + std::to_string(hi) + "]");
  }
  return static_cast<int64_t>(*v);
}

core::Result<CacheScope> parse_scope(std::string const& raw, std::string const& where) {
  auto j = FlatJson::parse(raw, where);
  if (!j.ok()) return j.error();
  CacheScope s;
  for (auto [key, field] : {std::pair{"device_name", &s.device_name},
                            {"driver", &s.driver},
                            {"toolchain", &s.toolchain},
                            {"family", &s.family},
                            {"problem", &s.problem},
                            {"routing", &s.routing}}) {
    auto v = j->string(key);
    if (!v.ok()) return v.error();
    *field = *v;
  }
  auto sm = integer(*j, "sm_count", where);
  if (!sm.ok()) return sm.error();
  auto fv = integer(*j, "family_version", where);
  if (!fv.ok()) return fv.error();
  s.sm_count = static_cast<int>(*sm);
  s.family_version = static_cast<int>(*fv);
  return s;
}

core::Result<CacheEntry> parse_entry(std::string const& raw, std::string const& where) {
  auto j = FlatJson::parse(raw, where);
  if (!j.ok()) return j.error();
  for (char const* key : {"scope", "bucket", "config", "source"}) {
    if (!j->has(key)) return parse_error(where, std::string("missing field '") + key + "'");
  }
  CacheEntry e;
  auto scope = parse_scope(j->raw("scope"), where + ".scope");
  if (!scope.ok()) return scope.error();
  e.scope = *scope;
  auto bucket = integer(*j, "bucket", where, core::kMaxTokens);
  if (!bucket.ok()) return bucket.error();
  e.bucket = *bucket;
  auto config = core::parse_moe_config_json(j->raw("config"), where + ".config");
  if (!config.ok()) return config.error();
  e.config = *config;
  auto source = core::parse_source_json(j->raw("source"), where + ".source");
  if (!source.ok()) return source.error();
  e.source = *source;
  return e;
}

/// Exclusive flock on "<path>.lock" for the life of the object, waited for in 20 ms polls up to
/// wait.timeout_s (a blocking flock would wait forever behind a stuck process).
class FileLock {
 public:
  FileLock(std::string const& path, LockWait const& wait) : lock_path_(path + ".lock") {
    fd_ = ::open(lock_path_.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      error_ = "cannot open the knob cache's lock file: " + std::string(std::strerror(errno)) +
               "; check the directory's permissions";
      return;
    }
    auto const start = std::chrono::steady_clock::now();
    bool told = false;
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) {
        error_ = "cannot lock the knob cache: " + std::string(std::strerror(errno));
        break;
      }
      double const waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited >= wait.timeout_s) {
        error_ = "another process has held this lock for " + std::to_string(int(waited)) +
                 " s; the tuned entry is not saved: let that process finish, or kill it if it "
                 "hangs (the lock goes with it), then run again";
        break;
      }
      if (!told && waited >= wait.notice_s && wait.waiting) {
        wait.waiting("waiting for " + lock_path_ + ", held by another process (up to " +
                     std::to_string(int(wait.timeout_s)) + " s)");
        told = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!error_.empty()) ::close(fd_), fd_ = -1;
  }
  ~FileLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the flock
  }
  FileLock(FileLock const&) = delete;
  FileLock& operator=(FileLock const&) = delete;
  core::Status status() const {
    if (fd_ >= 0) return core::Status::Ok();
    return core::make_error(core::ErrorCode::kIo, lock_path_, error_);
  }

 private:
  std::string lock_path_;
  std::string error_;
  int fd_ = -1;
};

}  // namespace

CacheScope make_scope(core::DeviceInfo const& device, std::string const& family, int family_version,
                      core::MoeProblem problem, core::RoutingProfile const& routing) {
  problem.num_tokens = 0;
  return {.device_name = device.name,
          .sm_count = device.sm_count,
          .driver = device.driver,
          .toolchain = device.toolchain,
          .family = family,
          .family_version = family_version,
          .problem = core::format_problem_spec(problem),
          .routing = core::format_routing(routing)};
}

std::string scope_difference(CacheScope const& a, CacheScope const& b) {
  auto diff = [](char const* name, std::string const& x, std::string const& y) {
    return std::string(name) + " is '" + x + "' in the cache but '" + y + "' here";
  };
  if (a.device_name != b.device_name) return diff("device_name", a.device_name, b.device_name);
  if (a.sm_count != b.sm_count) {
    return diff("sm_count", std::to_string(a.sm_count), std::to_string(b.sm_count));
  }
  if (a.driver != b.driver) return diff("driver", a.driver, b.driver);
  if (a.toolchain != b.toolchain) return diff("toolchain", a.toolchain, b.toolchain);
  if (a.family != b.family) return diff("family", a.family, b.family);
  if (a.family_version != b.family_version) {
    return diff("family_version", std::to_string(a.family_version),
                std::to_string(b.family_version));
  }
  if (a.problem != b.problem) return diff("problem", a.problem, b.problem);
  if (a.routing != b.routing) return diff("routing", a.routing, b.routing);
  return "";
}

std::string format_knob_cache(KnobCacheFile const& file) {
  std::string out =
      "{\n  \"cache_version\": " + std::to_string(kKnobCacheVersion) + ",\n  \"entries\": [";
  for (size_t i = 0; i < file.entries.size(); ++i) {
    CacheEntry const& e = file.entries[i];
    out += std::string(i == 0 ? "" : ",") + "\n    {\"scope\": " + format_scope(e.scope) +
           ",\n     \"bucket\": " + std::to_string(e.bucket) +
           ",\n     \"config\": " + core::to_json_text(e.config, -1) +
           ",\n     \"source\": " + core::to_json_text(e.source, -1) + "}";
  }
  return out + (file.entries.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

core::Result<KnobCacheFile> parse_knob_cache(std::string const& text, std::string const& path) {
  auto j = FlatJson::parse(text, path);
  if (!j.ok()) return j.error();
  if (!j->has("cache_version") || !j->has("entries")) {
    return parse_error(path,
                       "not a knob cache (needs 'cache_version' and 'entries'); delete it "
                       "or point --cache / $MOETUNE_CACHE elsewhere");
  }
  auto version = integer(*j, "cache_version", path);
  if (!version.ok()) return version.error();
  if (*version < kOldestKnobCacheVersion || *version > kKnobCacheVersion) {
    return core::make_error(
        core::ErrorCode::kVersion, path,
        "cache_version " + std::to_string(*version) + " is not readable by this moetune (reads " +
            std::to_string(kOldestKnobCacheVersion) + ".." + std::to_string(kKnobCacheVersion) +
            "); use the moetune that wrote it or delete the file to start a new cache");
  }
  auto items = FlatJson::split_array(j->raw("entries"), path + ": entries");
  if (!items.ok()) return items.error();
  KnobCacheFile file;
  for (size_t i = 0; i < items->size(); ++i) {
    auto e = parse_entry((*items)[i], path + ": entries[" + std::to_string(i) + "]");
    if (!e.ok()) return e.error();
    file.entries.push_back(std::move(*e));
  }
  return file;
}

core::Result<KnobCacheFile> load_knob_cache(std::string const& path) {
  auto text = core::read_file(path);
  if (!text.ok()) {
    if (text.error().code == core::ErrorCode::kNotFound) return KnobCacheFile{};
    return text.error();
  }
  return parse_knob_cache(*text, path);
}

ScopedEntries select_entries(KnobCacheFile const& file, CacheScope const& ours,
                             std::string const& path) {
  ScopedEntries out;
  int ignored = 0;
  std::string first_reason;
  for (CacheEntry const& e : file.entries) {
    if (e.scope == ours) {
      out.usable.push_back(e);
      continue;
    }
    // Entries of other problems or routings are other layers' and simply not ours; the same
    // problem under another device, driver, toolchain or family version is a stale entry.
    if (e.scope.problem != ours.problem || e.scope.routing != ours.routing) continue;
    if (ignored++ == 0) first_reason = scope_difference(e.scope, ours);
  }
  if (ignored > 0) {
    out.warning = path + ": ignored " + std::to_string(ignored) + " knob cache " +
                  (ignored == 1 ? "entry" : "entries") + " for this problem made under another " +
                  "scope (" + first_reason + "); they are never used: re-run with --knobs auto " +
                  "here to tune this device";
  }
  return out;
}

core::Result<KnobCacheFile> merge_into_knob_cache(std::string const& path, CacheEntry const& entry,
                                                  LockWait const& wait) {
  std::filesystem::path const dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) MOETUNE_RETURN_IF_ERROR(core::ensure_writable_dir(dir.string()));
  FileLock const lock(path, wait);
  MOETUNE_RETURN_IF_ERROR(lock.status());
  auto file = load_knob_cache(path);
  if (!file.ok()) return file.error();  // never overwrite a cache we cannot read
  bool replaced = false;
  for (CacheEntry& e : file->entries) {
    if (e.scope == entry.scope && e.bucket == entry.bucket) {
      e = entry;
      replaced = true;
    }
  }
  if (!replaced) file->entries.push_back(entry);
  MOETUNE_RETURN_IF_ERROR(core::write_file_atomic(path, format_knob_cache(*file)));
  return file;
}

}  // namespace moetune::runtime
