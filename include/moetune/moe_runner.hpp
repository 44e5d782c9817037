// MoeRunner: the serving API. Built once per MoE layer shape (a problem template without M), a
// backend and options; then `run` launches the fused layer for any M up to max_tokens with no
// allocation by the runner and a hot config lookup of a few nanoseconds (one atomic load).
//
// Which config runs (knobs):
//   none      -> the knob cache entry of this scope and bucket, else the table row (the resolver:
//                nearest key, policies; rule other_device when the table was made on another
//                device, unless RunnerOptions::same_device_tables forbids such tables), else the
//                backend's documented default config;
//   explicit  -> that config, validated with the backend's can_implement (refused with the reason);
//   auto      -> the cache entry when there is one (never re-tuned), else a bounded in-process
//                sweep of this bucket (time budget), whose winner is persisted in the cache and
//                served. Refused while a CUDA graph is being captured (a sweep launches and
//                synchronises).
// Kernel fast paths (levers) are fixed at create(): RunnerOptions::levers, else MOETUNE_LEVER_*.
// With lever batch_invariant on, knobs none and auto serve the backend's batch-invariant config
// at every M (tables, the knob cache and auto bypassed) and explicit configs are refused.
// Every answer (Choice) says which rule chose it. docs/runtime.md describes the whole flow;
// examples/01_moe_runner/ is a runnable copy-me example.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/lever.hpp"
#include "core/lever_resolve.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "core/routing.hpp"
#include "core/source.hpp"
#include "kernels/fast_paths.hpp"

namespace moetune {

/// How the caller asks for a config.
enum class KnobMode { kNone, kExplicit, kAuto };

/// The knobs argument of MoeRunner::run. Build with Knobs::none(), Knobs::explicit_config(c) or
/// Knobs::auto_tune().
struct Knobs {
  KnobMode mode = KnobMode::kNone;
  core::MoeConfig config;  ///< used when mode == kExplicit

  static Knobs none() { return {}; }
  static Knobs auto_tune() { return {.mode = KnobMode::kAuto, .config = {}}; }
  static Knobs explicit_config(core::MoeConfig const& c) {
    return {.mode = KnobMode::kExplicit, .config = c};
  }
};

/// Which rule chose a config. kOtherDevice: a row of a table whose device_name is not this
/// device's (a table tuned on an H200 serving on an H100; RunnerOptions::same_device_tables).
/// kBatchInvariant: lever batch_invariant on, the backend's batch-invariant config
/// (core::Backend::batch_invariant_config).
enum class ChoiceRule { kExplicit, kCache, kTable, kDefault, kAuto, kOtherDevice, kBatchInvariant };
/// "explicit", "cache", "table", "default", "auto", "other_device", "batch_invariant".
char const* to_string(ChoiceRule r);

/// The answer for one M: the config, the rule, and a sentence saying why.
struct Choice {
  int64_t m = 0;
  int64_t bucket = 0;  ///< the cache bucket of M (runtime_bucket)
  core::MoeConfig config;
  ChoiceRule rule = ChoiceRule::kDefault;
  std::optional<core::Source> source;  ///< table row's / cache entry's provenance
  std::string explain;  ///< "M=5 -> cache entry for bucket 8 (tuned 2026-11-29, 31.2 us)"
};

/// The project's MOETUNE_* variables that are not lever knobs (the CLI's environment table:
/// MOETUNE_BACKEND, MOETUNE_CACHE, ...). A runner resolving levers from the environment accepts
/// these and MOETUNE_LEVER_<NAME>; any other MOETUNE_* variable fails create() (a typo would
/// otherwise switch nothing, silently).
std::vector<std::string> const& project_env_vars();

/// Where a runner's kernel fast paths (levers, docs/levers.md) come from.
struct LeverOptions {
  /// Set: every launch, default config and "auto" sweep takes exactly these; the environment is
  /// not read. Unset (default): create() resolves the built-in lever table once, at the
  /// deployment {backend, arch of the device, tp, ep, dtype of the problem, role}, under `env`.
  std::optional<kernels::FastPaths> fast_paths;
  /// The MOETUNE_* variables levers resolve under; unset = this process's environment, read once
  /// by create(). MOETUNE_LEVER_<NAME>=on|off forces one lever.
  std::optional<core::EnvSnapshot> env;
  int tp = 1;                    ///< tensor-parallel ranks of the deployment
  int ep = 1;                    ///< expert-parallel ranks of the deployment
  std::string role = "prefill";  ///< prefill | decode (what the lever rules see)
  /// Non-lever MOETUNE_* variables the environment may hold; default: project_env_vars().
  std::vector<std::string> known_env_vars = project_env_vars();
};

/// The fast paths a runner took and why (MoeRunner::levers()).
struct RunnerLevers {
  kernels::FastPaths fast_paths;
  std::string origin;  ///< "options" (LeverOptions::fast_paths) or "environment"
  /// The deployment the lever table was resolved at (origin "environment").
  std::optional<core::Deployment> deployment;
  /// Every lever with the rule that decided it, in table order (origin "environment"; empty
  /// for "options").
  std::vector<core::ResolvedLever> levers;
};

/// "align_multi_cta+wgmma_mainloop+pdl": the fast paths that are on, in FastPaths order.
std::string on_names(kernels::FastPaths const& fast_paths);

/// Where one run() takes its scratch memory when RunnerOptions::caller_workspace is set: `alloc`
/// returns at least `bytes` of memory of the run's device that stays valid for work queued on the
/// run's stream (e.g. torch's caching allocator). It is called at most once per run(), on the
/// calling thread, and may return nullptr to fail the call. Unused on cpu.
struct WorkspaceSource {
  void* (*alloc)(void* ctx, size_t bytes) = nullptr;
  void* ctx = nullptr;
};

/// The arguments of one call (see MoeRunner::run for layouts).
struct RunArgs {
  void* stream = nullptr;  ///< cudaStream_t on cuda; ignored on cpu
  void const* x = nullptr;
  int32_t const* topk_ids = nullptr;
  float const* topk_weights = nullptr;
  void const* w1 = nullptr;
  void const* w2 = nullptr;
  void* out = nullptr;
  int64_t m = 0;
  /// Per-expert biases in the weights' dtype, b1 [E, N1] and b2 [E, K]: both set or both null;
  /// set only for a runner created with problem.has_bias.
  void const* b1 = nullptr;
  void const* b2 = nullptr;
  /// fp8 runners (problem.quant; w1 and w2 e4m3): fp8_block: w1_scale [E, N1/128, K/128] and
  /// w2_scale [E, K/128, I/128] fp32; fp8_tensor: w1_scale and w2_scale [E] and the static input
  /// scales a1_scale and a2_scale [1]. Device pointers; null for bf16 runners.
  float const* w1_scale = nullptr;
  float const* w2_scale = nullptr;
  float const* a1_scale = nullptr;
  float const* a2_scale = nullptr;
  WorkspaceSource workspace;  ///< required on cuda when RunnerOptions::caller_workspace is set
};

/// Options of a runner. Every field has a documented default.
struct RunnerOptions {
  /// Directory of tables (tables/<device>/); "" = no tables. The table whose key matches the
  /// problem (E, I, K, top_k, activation, dtype) and the backend's family is used; one made on
  /// this device (its device_name, against $MOETUNE_DEVICE_NAME or the backend's device: "cpu"
  /// on cpu) is preferred over one made on another device.
  std::string tables_dir;
  /// Unset (default, and $MOETUNE_TABLES_SAME_DEVICE unset or 0): a table made on another device
  /// serves, and its rows' rule is other_device. Set (or MOETUNE_TABLES_SAME_DEVICE=1): such a
  /// table is not used, with one warning; the knob cache or the default config serves.
  bool same_device_tables = false;
  /// Knob cache file; "" = $MOETUNE_CACHE, else <cache home>/moetune/knobs-<role>.json.
  std::string cache_path;
  /// Deployment role (one cache file per role when cache_path is defaulted): letters, digits,
  /// '-', '_' and '.'; a path separator fails create() (kInvalidArgument).
  std::string role = "default";
  /// Routing profile the cache is scoped by and "auto" tunes on.
  core::RoutingProfile routing;
  /// Wall-clock budget of one "auto" sweep, seconds (the sweep stops taking candidates past it).
  double auto_budget_s = 30;
  /// Largest M run() accepts; the workspace is sized for it up front (unless caller_workspace).
  int64_t max_tokens = 8192;
  /// Set: the runner holds no workspace; each cuda run() takes its scratch from
  /// RunArgs::workspace (sized for that call's M and config), so concurrent streams and CUDA
  /// graphs each get their own. The torch ops use this with torch's caching allocator.
  bool caller_workspace = false;
  /// Kernel fast paths: explicit, else MOETUNE_LEVER_* resolved once at create() (see above).
  LeverOptions levers;
  /// Where warnings go (one line each); default: stderr, prefixed "moetune: warning: ".
  std::function<void(std::string const&)> warn;
};

/// Default knob cache path for a role: $MOETUNE_CACHE when set, else
/// $XDG_CACHE_HOME/moetune/knobs-<role>.json, else ~/.cache/moetune/knobs-<role>.json.
std::string default_knob_cache_path(std::string const& role);

/// Smallest power of two >= m (0 for m = 0): the bucket cache entries and "auto" are keyed by.
int64_t runtime_bucket(int64_t m);

class RunnerImpl;

/// One MoE layer shape served on one backend. Thread-safe: choose() and run() may be called from
/// several threads; run() serialises on the runner's one workspace (use one runner per stream
/// for concurrent streams).
class MoeRunner {
 public:
  /// Builds a runner: loads the matching table (if any) and the knob cache (entries whose scope
  /// differs from this device/toolchain/family are ignored with one warning), and sizes the
  /// workspace for options.max_tokens. Resolves the fast paths once (options.levers). Configs from
  /// the table or cache that the backend refuses under those fast paths are served as the default
  /// config instead, with one warning each. `problem.num_tokens` is ignored. Fails on an invalid
  /// problem, an unknown or unavailable backend, a corrupt table or cache (naming the file), or a
  /// bad MOETUNE_* variable (an unknown name, a lever knob other than on|off, a knob for a lever
  /// not served at this deployment: the lever resolver's one-line message; a MOETUNE_DEVICE_NAME
  /// or MOETUNE_TABLES_SAME_DEVICE value it cannot take), or with lever batch_invariant on where
  /// the backend has no batch-invariant config for the problem (fp8 on cuda).
  static core::Result<std::unique_ptr<MoeRunner>> create(core::MoeProblem problem,
                                                         std::string const& backend,
                                                         RunnerOptions options = {});
  ~MoeRunner();
  MoeRunner(MoeRunner const&) = delete;
  MoeRunner& operator=(MoeRunner const&) = delete;

  /// Which config serves M under `knobs` (see the top of this file). Hot (M seen before, knobs
  /// none or auto): one atomic load. "auto" may tune (bounded by auto_budget_s) on first use.
  core::Result<Choice> choose(int64_t m, Knobs const& knobs = {});

  /// The Choice run() uses for knobs none or auto, without copying it: after the first call for
  /// an M, one atomic load. The pointer stays valid for the runner's life. Explicit knobs are
  /// refused here (choose() and run() validate them).
  core::Result<Choice const*> lookup(int64_t m, Knobs const& knobs = {});

  /// Runs the layer for M tokens. Pointers are device pointers (cuda; `stream` is a cudaStream_t)
  /// or host pointers (cpu; `stream` is ignored). Layouts: x [M, K], topk_ids [M, top_k] int32,
  /// topk_weights [M, top_k] fp32, w1 [E, N1, K], w2 [E, K, I], out [M, K] in the problem dtype.
  /// Fails when M > max_tokens, on a refused explicit config (every explicit config under lever
  /// batch_invariant), or when "auto" would tune during graph capture. `chosen`, when given,
  /// receives the Choice.
  core::Status run(void* stream, void const* x, int32_t const* topk_ids, float const* topk_weights,
                   void const* w1, void const* w2, void* out, int64_t m, Knobs const& knobs = {},
                   Choice* chosen = nullptr);
  /// The same call with its arguments in one struct; the form that can pass a WorkspaceSource.
  core::Status run(RunArgs const& args, Knobs const& knobs = {}, Choice* chosen = nullptr);

  /// Marks graph capture on or off. The cuda backend also asks the stream
  /// (cudaStreamIsCapturing); the cpu backend has no graphs, so this flag is how callers (and
  /// tests) say a capture is in progress. While set, "auto" that would tune is refused.
  void set_capturing(bool capturing);
  bool capturing() const;

  core::MoeProblem const& problem() const;
  std::string const& backend_name() const;
  std::string const& cache_path() const;
  std::string const& table_path() const;  ///< "" when no table matched
  /// The fast paths every launch of this runner takes, and what decided each.
  RunnerLevers const& levers() const;
  /// Workspace bytes held (device bytes on cuda, reserved host bytes on cpu).
  size_t workspace_bytes() const;
  /// Warnings emitted so far (also sent to options.warn).
  std::vector<std::string> warnings() const;

 private:
  explicit MoeRunner(std::unique_ptr<RunnerImpl> impl);
  std::unique_ptr<RunnerImpl> impl_;
};

/// RAII: marks a runner as capturing for a scope (see MoeRunner::set_capturing).
class ScopedCapture {
 public:
  explicit ScopedCapture(MoeRunner& r) : r_(r) { r_.set_capturing(true); }
  ~ScopedCapture() { r_.set_capturing(false); }
  ScopedCapture(ScopedCapture const&) = delete;
  ScopedCapture& operator=(ScopedCapture const&) = delete;

 private:
  MoeRunner& r_;
};

}  // namespace moetune
