// Prewarm and pack: serving never compiles or times.
//   prewarm_tables: every config every table in a directory names is made ready ahead of time:
//     cuda (sm90_gather): compiled with NVRTC into the cubin cache (no GPU needed), or found
//     there; cpu (cpu_tiled): validated with can_implement (its kernels are in the binary).
//   pack_bundle: a directory to deploy: tables/ (the vLLM files and manifests), cubin/ (cuda: the
//     cubins of every config's modules, under the cache's own names) and bundle.json (what is
//     inside). Serve it with MOETUNE_CACHE_DIR=<bundle> and tables_dir <bundle>/tables: every
//     kernel loads from cubin/ and NVRTC never runs (libnvrtc is still linked: it names the cache
//     key).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/problem.hpp"
#include "core/result.hpp"

namespace moetune::runtime {

/// 2: a config lists its cubins (one module per GEMM, one for align + combine); 1 had one.
inline constexpr int kBundleVersion = 2;

/// One config a table names and what prewarm did with it.
struct PrewarmItem {
  std::string table;                ///< vLLM file path
  int64_t bucket = 0;               ///< the row's key M
  std::string config;               ///< short_string of the config
  std::string outcome;              ///< "validated" (cpu), "cached" or "compiled" (cuda)
  std::vector<std::string> cubins;  ///< cuda: its modules' cubin files; none on cpu
  double compile_ms = 0;
};

struct PrewarmReport {
  int tables = 0;
  std::vector<PrewarmItem> items;
};

/// Called after each config is done: the item (its outcome and compile time), its 1-based index
/// and the number of configs in all. A compile takes seconds, so a caller can show progress.
using PrewarmProgress = std::function<void(PrewarmItem const&, size_t index, size_t total)>;

/// Prewarms every row of every table in `tables_dir`. Fails (naming the table, row and reason)
/// on a table that does not load, lacks K/top_k/activation in its manifest, a row its family
/// cannot implement, a compile error, or a cuda table in a build without CUDA. Every table is
/// loaded before the first config is prewarmed.
core::Result<PrewarmReport> prewarm_tables(std::string const& tables_dir,
                                           PrewarmProgress const& progress = {});

/// Prewarms the default rule's config of `problem` at each M of `ms` (cuda: NVRTC into the cubin
/// cache; cpu: validated), for serving shapes no table covers. The report names table "default".
core::Result<PrewarmReport> prewarm_defaults(core::MoeProblem problem,
                                             std::vector<int64_t> const& ms,
                                             PrewarmProgress const& progress = {});

/// Prewarms `tables_dir`, then writes the bundle into `out_dir` (created; files written
/// atomically). Returns the prewarm report.
core::Result<PrewarmReport> pack_bundle(std::string const& tables_dir, std::string const& out_dir,
                                        PrewarmProgress const& progress = {});

/// The bundle manifest (bundle.json) for a report.
std::string format_bundle_manifest(PrewarmReport const& report, std::string const& tables_dir);

}  // namespace moetune::runtime
