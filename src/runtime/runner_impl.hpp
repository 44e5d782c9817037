// RunnerImpl: the private state and knob resolution of MoeRunner (include/moetune/moe_runner.hpp),
// shared by moe_runner.cpp (lookups, run) and runner_setup.cpp (create: table, cache, workspace).
// Hot lookups are one atomic load of a memo slot; every miss resolves under `mu`.
#pragma once

#include <atomic>
#include <cstdio>
#include <deque>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/names.hpp"
#include "core/resolver.hpp"
#include "core/table.hpp"
#include "moetune/moe_runner.hpp"
#include "runtime/auto_tune.hpp"
#include "runtime/device_ops.hpp"
#include "runtime/knob_cache.hpp"

namespace moetune {

using runtime::CacheEntry;

/// One resolved answer and its launchable form; lives as long as the runner (the memo points
/// at it).
struct Slot {
  Choice choice;
  runtime::Launchable launchable;
};

/// M beyond this is memoised in a map under the lock (the array costs 16 B per M).
constexpr int64_t kMaxMemo = 1 << 16;

class RunnerImpl {
 public:
  core::MoeProblem problem;
  std::string backend_name;
  std::unique_ptr<core::Backend> backend;
  RunnerOptions options;
  RunnerLevers levers;  // fixed by setup(); the backend and ops were given its fast paths
  std::unique_ptr<runtime::DeviceOps> ops;
  std::optional<core::Table> table;
  std::string table_path;
  std::string device_label;  // this device as table names spell it (runtime/device_env.hpp)
  std::string table_device;  // the table's device when it is another's, else ""
  runtime::CacheScope scope;
  std::string cache_path;
  std::atomic<bool> capturing{false};

  mutable std::mutex mu;  // guards everything below, and every slow path
  std::vector<CacheEntry> cache;
  std::deque<Slot> arena;  // deque: push_back never moves existing slots
  std::vector<std::pair<core::MoeConfig, runtime::Launchable>> explicit_launchables;
  std::vector<std::string> warnings;
  std::set<std::string> refused_warned;  // configs refused under the fast paths, warned once
  int64_t memo_size = 0;
  std::map<int64_t, Slot const*> memo_large[2];         // M >= memo_size, under mu
  std::unique_ptr<std::atomic<Slot const*>[]> memo[2];  // [0] knobs none, [1] knobs auto

  /// create(): backend, device ops, the matching table, the knob cache (scope-checked) and the
  /// workspace for max_tokens over every config known now (runner_setup.cpp).
  core::Status setup(core::MoeProblem p, std::string const& backend, RunnerOptions opts);
  /// setup()'s steps: the one table of options.tables_dir that matches the problem and the
  /// backend's family (others named in a warning), one made on this device first, one made on
  /// another only unless same_device_tables; the knob cache entries of this runner's scope; the
  /// workspace for every config known now.
  core::Status load_matching_table();
  core::Status load_scoped_knob_cache(core::DeviceInfo const& device);
  core::Status reserve_known_workspace();

  /// One printable line whatever the text echoes (a cache's bytes may hold newlines, invalid
  /// UTF-8 or kilobytes): escaped and cut in its middle, as the CLI's errors are.
  void warn(std::string const& text) {  // caller holds mu or is still in create()
    std::string const line = core::clip_middle(text);
    warnings.push_back(line);
    if (options.warn) {
      options.warn(line);
    } else {
      std::cerr << "moetune: warning: " << line << "\n";
    }
  }

  core::MoeProblem at(int64_t m) const {
    core::MoeProblem p = problem;
    p.num_tokens = m;
    return p;
  }

  core::Result<runtime::Launchable> launchable_for(core::MoeConfig const& c, int64_t m,
                                                   void* stream) {
    bool const in_capture = capturing.load() || ops->stream_capturing(stream);
    if (!options.caller_workspace) {
      MOETUNE_RETURN_IF_ERROR(ops->reserve(problem, options.max_tokens, {c}, in_capture));
    }
    bool compiled = false;
    auto l = ops->prepare(at(m), c, &compiled);
    if (l.ok() && compiled) {
      warn("compiled " + core::short_string(c) + " while serving (it was not in the cubin " +
           "cache); run `moetune prewarm --tables DIR` or `moetune pack` before serving");
    }
    return l;
  }

  core::Result<Slot const*> publish(Choice choice, void* stream) {
    auto l = launchable_for(choice.config, choice.m, stream);
    if (!l.ok()) return l.error();
    arena.push_back({std::move(choice), *l});
    return &arena.back();
  }

  CacheEntry const* cache_entry(int64_t bucket) const {
    for (auto const& e : cache) {
      if (e.bucket == bucket) return &e;
    }
    return nullptr;
  }

  Choice from_cache(int64_t m, CacheEntry const& e, bool auto_mode) const {
    auto it = e.source.numbers.find("time_us");
    std::string const time =
        it == e.source.numbers.end() ? "" : ", " + format_us(it->second) + " us";
    return {.m = m,
            .bucket = e.bucket,
            .config = e.config,
            .rule = ChoiceRule::kCache,
            .source = e.source,
            .explain = "M=" + std::to_string(m) + " -> knob cache entry for bucket " +
                       std::to_string(e.bucket) + " (" + e.source.kind + " " + e.source.date +
                       time + ") in " + cache_path +
                       (auto_mode ? "; auto: already tuned, not re-tuned" : "")};
  }

  static std::string format_us(double us) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", us);
    return buf;
  }

  static core::Source default_source() {
    core::Source s;
    s.kind = "default";
    return s;
  }

  Choice from_table_or_default(int64_t m) const {
    int64_t const bucket = runtime_bucket(m);
    if (!table) {
      return {.m = m,
              .bucket = bucket,
              .config = backend->default_config(at(m)),
              .rule = ChoiceRule::kDefault,
              .source = default_source(),
              .explain = "M=" + std::to_string(m) + " -> " + backend->family() +
                         " default config (no cache entry, no table for this problem" +
                         (options.tables_dir.empty() ? "" : " in " + options.tables_dir) +
                         "; docs/runtime.md)"};
    }
    core::Resolution r =
        core::resolve(*table, m, [this](int64_t mm) { return backend->default_config(at(mm)); });
    bool const row = r.rule == core::Rule::kExactKey || r.rule == core::Rule::kNearestKey;
    ChoiceRule rule = row ? ChoiceRule::kTable : ChoiceRule::kDefault;
    std::string other;
    if (row && !table_device.empty()) {
      rule = ChoiceRule::kOtherDevice;
      other = "; other_device: made on " + table_device + ", this device is " + device_label +
              " (RunnerOptions::same_device_tables or MOETUNE_TABLES_SAME_DEVICE=1 forbids)";
    }
    return {.m = m,
            .bucket = bucket,
            .config = r.config,
            .rule = rule,
            .source = r.source,
            .explain = r.explain + " [" + table_path + other + "]"};
  }

  /// Lever batch_invariant: the backend's batch-invariant config for M, for knobs none and auto
  /// alike. The knob cache, the table and auto are not consulted: their configs differ per
  /// bucket, and a token's bits must not depend on which bucket its batch falls in. Defined in
  /// moe_runner.cpp.
  core::Result<Choice> batch_invariant_choice(int64_t m, KnobMode mode) const;

  /// A cache entry or table row the backend refuses under this runner's fast paths (a lever
  /// switched off the path it needs) is not launched: the default serves, with one warning.
  Choice refused_to_default(Choice c) {
    if (c.rule != ChoiceRule::kCache && c.rule != ChoiceRule::kTable &&
        c.rule != ChoiceRule::kOtherDevice) {
      return c;
    }
    core::Status const s = backend->can_implement(at(c.m), c.config);
    if (s.ok()) return c;
    std::string const why = std::string(to_string(c.rule)) + " config " +
                            core::short_string(c.config) + " for M=" + std::to_string(c.m) +
                            " is refused under fast paths '" + on_names(levers.fast_paths) + "' (" +
                            s.error().message + ")";
    if (refused_warned.insert(core::short_string(c.config)).second) {
      warn(why + "; serving the default config (warned once per config)");
    }
    return {.m = c.m,
            .bucket = c.bucket,
            .config = backend->default_config(at(c.m)),
            .rule = ChoiceRule::kDefault,
            .source = default_source(),
            .explain = "M=" + std::to_string(c.m) + " -> " + backend->family() +
                       " default config: the " + why};
  }

  core::Result<Slot const*> resolve_locked(int64_t m, KnobMode mode, void* stream) {
    if (levers.fast_paths.batch_invariant) {
      auto c = batch_invariant_choice(m, mode);
      if (!c.ok()) return c.error();
      return publish(std::move(*c), stream);
    }
    int64_t const bucket = runtime_bucket(m);
    if (CacheEntry const* e = cache_entry(bucket)) {
      return publish(refused_to_default(from_cache(m, *e, mode == KnobMode::kAuto)), stream);
    }
    if (mode == KnobMode::kNone || m == 0) {
      return publish(refused_to_default(from_table_or_default(m)), stream);
    }
    if (capturing.load() || ops->stream_capturing(stream)) {
      return core::make_error(
          core::ErrorCode::kUnsupported, "MoeRunner knobs=auto",
          "bucket " + std::to_string(bucket) + " of " + core::to_string(at(bucket)) +
              " is not in the knob cache and tuning it during CUDA graph capture is refused " +
              "(a sweep launches and synchronises); run once with knobs auto before capturing, " +
              "or fill the cache with `moetune run --knobs auto`");
    }
    runtime::AutoTuneOptions ao;
    ao.budget_s = options.auto_budget_s;
    ao.fast_paths = levers.fast_paths;
    auto tuned =
        runtime::auto_tune_bucket(backend_name, *backend, problem, bucket, options.routing, ao);
    if (!tuned.ok()) return tuned.error();
    CacheEntry entry{
        .scope = scope, .bucket = bucket, .config = tuned->config, .source = tuned->source};
    runtime::LockWait lock_wait;
    lock_wait.waiting = [this](std::string const& line) { warn(line); };
    auto merged = runtime::merge_into_knob_cache(cache_path, entry, lock_wait);
    if (!merged.ok()) return merged.error();
    cache.push_back(entry);
    // The new entry outranks table rows for this bucket: forget what "none" memoised.
    for (int64_t i = 0; i < memo_size; ++i) memo[0][i].store(nullptr, std::memory_order_release);
    memo_large[0].clear();
    // Later lookups see the cache rule; this call reports that auto chose it.
    auto cached = publish(from_cache(m, entry, true), stream);
    if (!cached.ok()) return cached.error();
    if (m < memo_size) memo[1][m].store(*cached, std::memory_order_release);
    Choice now = (*cached)->choice;
    now.rule = ChoiceRule::kAuto;
    now.explain = "M=" + std::to_string(m) + " -> auto: tuned bucket " + std::to_string(bucket) +
                  " now (" + std::to_string(tuned->candidates_tried) + " candidates, " +
                  (tuned->default_kept ? "default kept" : "challenger won") + "), persisted in " +
                  cache_path;
    return publish(std::move(now), stream);
  }

  core::Result<Slot const*> lookup(int64_t m, KnobMode mode, void* stream) {
    int const which = mode == KnobMode::kAuto ? 1 : 0;
    if (m < memo_size) {
      if (Slot const* s = memo[which][m].load(std::memory_order_acquire)) return s;
    }
    std::lock_guard<std::mutex> lock(mu);
    if (m < memo_size) {
      if (Slot const* s = memo[which][m].load(std::memory_order_acquire)) return s;
    } else if (auto it = memo_large[which].find(m); it != memo_large[which].end()) {
      return it->second;
    }
    auto s = resolve_locked(m, mode, stream);
    if (s.ok() && (*s)->choice.rule != ChoiceRule::kAuto) {
      if (m < memo_size) {
        memo[which][m].store(*s, std::memory_order_release);
      } else {
        memo_large[which][m] = *s;  // M past the array: memoised under the lock, never re-resolved
      }
    }
    return s;
  }

  core::Status check_m(int64_t m) const {
    if (m < 0 || m > options.max_tokens) {
      return core::make_error(core::ErrorCode::kInvalidArgument, "MoeRunner",
                              "M = " + std::to_string(m) + " is outside [0, max_tokens = " +
                                  std::to_string(options.max_tokens) +
                                  "] (the workspace is sized for max_tokens); raise "
                                  "RunnerOptions::max_tokens");
    }
    return core::Status::Ok();
  }

  /// Both biases given exactly when the runner's problem has them.
  core::Status check_biases(void const* b1, void const* b2) const {
    bool const given = b1 != nullptr && b2 != nullptr;
    if (given == problem.has_bias && (b1 == nullptr) == (b2 == nullptr)) return core::Status::Ok();
    return core::make_error(core::ErrorCode::kInvalidArgument, "MoeRunner",
                            std::string("RunArgs b1/b2 are ") + (b1 ? "set" : "null") + "/" +
                                (b2 ? "set" : "null") + " but the runner's problem has " +
                                (problem.has_bias ? "biases" : "no biases") +
                                "; pass both biases exactly when problem.has_bias is set");
  }

  /// The fp8 scales given exactly as the runner's problem.quant asks (RunArgs says which).
  core::Status check_scales(RunArgs const& a) const {
    bool const q = problem.quant != core::Quant::kNone;
    bool const tensor = problem.quant == core::Quant::kFp8Tensor;
    struct Want {
      char const* name;
      void const* ptr;
      bool needed;
    };
    for (Want const w :
         {Want{"w1_scale", a.w1_scale, q}, Want{"w2_scale", a.w2_scale, q},
          Want{"a1_scale", a.a1_scale, tensor}, Want{"a2_scale", a.a2_scale, tensor}}) {
      if ((w.ptr != nullptr) == w.needed) continue;
      return core::make_error(core::ErrorCode::kInvalidArgument, "MoeRunner",
                              std::string("RunArgs ") + w.name + " is " + (w.ptr ? "set" : "null") +
                                  " but the runner's problem has quant " +
                                  std::string(core::to_string(problem.quant)) + "; pass " + w.name +
                                  (w.needed ? "" : " only for an fp8 quant that takes it"));
    }
    return core::Status::Ok();
  }

  core::Result<Choice> explicit_choice(int64_t m, core::MoeConfig const& c) const {
    if (levers.fast_paths.batch_invariant) {
      return core::make_error(
          core::ErrorCode::kInvalidArgument, "explicit knobs",
          "config " + core::short_string(c) +
              " is refused under lever batch_invariant, which serves the backend's "
              "batch-invariant configs, one kernel family at every M (a config chosen per call "
              "could differ between batches); pass no config (knobs none or auto) or turn the "
              "lever off");
    }
    core::Status s = backend->can_implement(at(m), c);
    if (!s.ok()) {
      return core::make_error(core::ErrorCode::kUnsupported, "explicit knobs",
                              "config " + core::short_string(c) + " conflicts with " +
                                  core::to_string(at(m)) + ": " + s.error().message);
    }
    return Choice{.m = m,
                  .bucket = runtime_bucket(m),
                  .config = c,
                  .rule = ChoiceRule::kExplicit,
                  .source = std::nullopt,
                  .explain = "M=" + std::to_string(m) + " -> explicit config " +
                             core::short_string(c) + " (validated by can_implement)"};
  }

  core::Result<runtime::Launchable> explicit_launchable(core::MoeConfig const& c, int64_t m,
                                                        void* stream) {
    std::lock_guard<std::mutex> lock(mu);
    for (auto const& [config, l] : explicit_launchables) {
      if (config == c) return l;
    }
    auto l = launchable_for(c, m, stream);
    if (l.ok()) explicit_launchables.emplace_back(c, *l);
    return l;
  }
};

}  // namespace moetune
