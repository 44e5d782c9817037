// KnobCache: the persistent winners of "auto", one JSON file per deployment role.
//
// File (kKnobCacheVersion 1):
//   {"cache_version": 1, "entries": [{"scope": {...}, "bucket": 16, "config": {...},
//                                     "source": {...}}, ...]}
// An entry's key is its scope (device name + SM count, driver, toolchain, kernel family +
// version, problem, routing profile) plus the bucket. A runner uses only entries whose scope
// equals its own; entries for the same problem made under another scope (another GPU, driver,
// toolchain or family version) are ignored with one warning per load, never used.
// Writes merge: under an exclusive flock on "<path>.lock" the file is re-read, the entry added
// (replacing one with the same key), and the file replaced atomically (temp, fsync, rename), so
// several processes sharing one cache lose nothing and never see a torn file.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "core/routing.hpp"
#include "core/source.hpp"

namespace moetune::runtime {

inline constexpr int kKnobCacheVersion = 1;
inline constexpr int kOldestKnobCacheVersion = 1;

/// What a cache entry is valid for. Every field must match for an entry to be used.
struct CacheScope {
  std::string device_name;  ///< "NVIDIA H200" / "cpu: <model>"
  int sm_count = 0;         ///< SMs (hardware threads on the cpu)
  std::string driver;       ///< "" on the cpu
  std::string toolchain;    ///< "nvcc 13.0" / "g++ 12.2.0"
  std::string family;       ///< "sm90_gather" / "cpu_tiled"
  int family_version = 0;
  std::string problem;  ///< format_problem_spec of the problem with M = 0
  std::string routing;  ///< format_routing of the profile

  bool operator==(CacheScope const&) const = default;
};

/// The scope of a (device, family, problem, routing).
CacheScope make_scope(core::DeviceInfo const& device, std::string const& family, int family_version,
                      core::MoeProblem problem, core::RoutingProfile const& routing);
/// The first field where `a` (the cache's) and `b` (ours) differ, as "driver is '550' in the
/// cache but '580' here"; "" when equal.
std::string scope_difference(CacheScope const& a, CacheScope const& b);

struct CacheEntry {
  CacheScope scope;
  int64_t bucket = 0;
  core::MoeConfig config;
  core::Source source;

  bool operator==(CacheEntry const&) const = default;
};

/// The whole file's entries, in file order.
struct KnobCacheFile {
  std::vector<CacheEntry> entries;
};

/// The JSON text of a cache file.
std::string format_knob_cache(KnobCacheFile const& file);
/// Parses a cache file's text strictly; a version outside [oldest, current] is kVersion naming
/// `path`. Errors name the path and the entry.
core::Result<KnobCacheFile> parse_knob_cache(std::string const& text, std::string const& path);
/// Reads `path`: a missing file is an empty cache (not an error); a corrupt one is an error.
core::Result<KnobCacheFile> load_knob_cache(std::string const& path);

/// The entries of `file` a runner of scope `ours` may use, and the warning (one line, "" when
/// none) about entries for the same problem and routing made under another scope.
struct ScopedEntries {
  std::vector<CacheEntry> usable;
  std::string warning;
};
ScopedEntries select_entries(KnobCacheFile const& file, CacheScope const& ours,
                             std::string const& path);

/// How long a writer waits for the cache's lock, and whom it tells that it waits.
struct LockWait {
  double timeout_s = 60;  ///< then the merge fails (kIo) naming the lock file
  double notice_s = 1;    ///< after this long, `waiting` is called once
  std::function<void(std::string const&)> waiting;  ///< one line; none = silent
};

/// Adds `entry` to the cache at `path` (replacing the entry with the same scope and bucket) under
/// the file lock, re-reading the file first so concurrent writers' entries survive. Creates the
/// directory when missing. Returns the merged file. A lock another process holds longer than
/// wait.timeout_s fails (kIo) with a message naming the lock file and what to do; after
/// wait.notice_s the wait is announced through wait.waiting.
core::Result<KnobCacheFile> merge_into_knob_cache(std::string const& path, CacheEntry const& entry,
                                                  LockWait const& wait = {});

}  // namespace moetune::runtime
