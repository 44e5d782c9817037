// Table lint. Reachability is computed from the nearest-key intervals, not by scanning M: key k
// serves M in (floor((prev+k)/2), floor((k+next)/2)] (a tie goes to the key listed first in the
// file, the smaller key in an ascending file, which moves a whole midpoint from one neighbour to
// the other), and the policies cut [1, max_m] down to (tiny_m_threshold, floor(factor * largest
// key)].
#include "core/lint.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>

#include "core/atomic_file.hpp"
#include "core/engine_rows.hpp"

namespace moetune::core {

namespace {

int64_t floor_half(int64_t a, int64_t b) {
  // floor((a + b) / 2) without overflow for non-negative keys.
  return a / 2 + b / 2 + ((a % 2) + (b % 2)) / 2;
}

LintFinding finding(LintKind kind, std::string const& file, std::optional<int64_t> bucket,
                    std::string message) {
  return LintFinding{kind, file, bucket, std::move(message)};
}

}  // namespace

std::string_view to_string(LintKind k) {
  switch (k) {
    case LintKind::kTinyMShadow: return "tiny_m_shadow";
    case LintKind::kUnreachableKey: return "unreachable_key";
    case LintKind::kFamilyCannotProduce: return "family_cannot_produce";
    case LintKind::kManifestMismatch: return "manifest_mismatch";
    case LintKind::kLoadError: return "load_error";
  }
  return "load_error";
}

std::string LintFinding::to_string() const {
  std::string s = file;
  if (bucket.has_value()) s += ": M=" + std::to_string(*bucket);
  return s + ": " + std::string(core::to_string(kind)) + ": " + message;
}

MoeProblem problem_for_key(TableKey const& key, int64_t m) {
  MoeProblem p;
  p.num_tokens = m;
  p.hidden_size = key.hidden_size;
  p.intermediate_size = key.intermediate_size;
  p.num_experts = key.num_experts;
  p.top_k = key.top_k == 0 ? 1 : key.top_k;
  p.activation = key.activation.value_or(Activation::kSiluGated);
  p.dtype = key.dtype;
  if (key.dtype_tag == "fp8_w8a8") {  // the engines' fp8 names (recipe.cpp's table_key_for)
    p.quant = key.block_shape.has_value() ? Quant::kFp8Block : Quant::kFp8Tensor;
  }
  if (key.family == "cpu_tiled") p.arch = "cpu";  // the cpu backend's own tables
  return p;
}

bool source_beats_default(std::optional<Source> const& source) {
  if (!source.has_value()) return false;
  auto const t = source->numbers.find("time_us");
  auto const d = source->numbers.find("default_us");
  return t != source->numbers.end() && d != source->numbers.end() && t->second < d->second;
}

std::vector<int64_t> unreachable_keys(Table const& table, int64_t max_m) {
  std::vector<int64_t> out;
  if (table.rows.empty()) return out;
  int64_t const largest = table.rows.rbegin()->first;
  if (max_m <= 0) max_m = largest;
  int64_t lo_limit = 1;
  int64_t hi_limit = max_m;
  if (table.policy.tiny_m_threshold)
    lo_limit = std::max(lo_limit, *table.policy.tiny_m_threshold + 1);
  if (table.policy.beyond_range_factor) {
    double const cap = std::floor(*table.policy.beyond_range_factor * static_cast<double>(largest));
    if (cap < static_cast<double>(hi_limit)) hi_limit = static_cast<int64_t>(cap);
  }
  // A key's file position decides the ties at the midpoints with its neighbours (the engines'
  // min() keeps the first listed); in an ascending file that is always the smaller key.
  std::map<int64_t, size_t> position;
  for (int64_t const k : keys_in_file_order(table)) position.emplace(k, position.size());
  for (auto it = table.rows.begin(); it != table.rows.end(); ++it) {
    int64_t const k = it->first;
    int64_t lo = std::numeric_limits<int64_t>::min();
    int64_t hi = std::numeric_limits<int64_t>::max();
    if (it != table.rows.begin()) {
      int64_t const prev = std::prev(it)->first;
      lo = floor_half(prev, k) + 1;
      bool const tie = (prev % 2) == (k % 2);
      if (tie && position.at(k) < position.at(prev)) --lo;  // the midpoint is k's
    }
    if (std::next(it) != table.rows.end()) {
      int64_t const next = std::next(it)->first;
      hi = floor_half(k, next);
      bool const tie = (k % 2) == (next % 2);
      if (tie && position.at(next) < position.at(k)) --hi;  // the midpoint is next's
    }
    if (std::max(lo, lo_limit) > std::min(hi, hi_limit)) out.push_back(k);
  }
  return out;
}

std::vector<LintFinding> lint_table(Table const& table, std::string const& file,
                                    std::string const& family,
                                    ProblemDefaultFn const& default_config,
                                    FamilyCanProduceFn const& can_produce,
                                    LintOptions const& options) {
  std::vector<LintFinding> out;
  int64_t const tiny = std::max(options.tiny_m_bucket, table.policy.tiny_m_threshold.value_or(0));
  for (auto const& [m, row] : table.rows) {
    if (m > tiny || !default_config) continue;
    MoeConfig const d = default_config(problem_for_key(table.key, m));
    if (row.config == d || source_beats_default(row.source)) continue;
    out.push_back(finding(
        LintKind::kTinyMShadow, file, m,
        "tiny-M row " + short_string(row.config) + " differs from the default " + short_string(d) +
            " but its source has no time_us < default_us; every M that snaps to key " +
            std::to_string(m) +
            " runs it unmeasured. Measure it against the default "
            "(numbers.time_us, numbers.default_us) or replace it with the default"));
  }
  int64_t const max_m = options.max_m;
  for (int64_t k : unreachable_keys(table, max_m)) {
    out.push_back(finding(
        LintKind::kUnreachableKey, file, k,
        "no M in [1, " + std::to_string(max_m > 0 ? max_m : table.rows.rbegin()->first) +
            "] resolves to key " + std::to_string(k) +
            ": the tiny-M gate or the beyond-range policy takes every M nearest to it; remove "
            "the row or relax the policy"));
  }
  if (!family.empty() && can_produce) {
    for (auto const& [m, row] : table.rows) {
      Status const st = can_produce(family, problem_for_key(table.key, m), row.config);
      if (st.ok()) continue;
      out.push_back(finding(LintKind::kFamilyCannotProduce, file, m,
                            "family " + family + " cannot produce " + short_string(row.config) +
                                ": " + st.error().message +
                                "; re-tune the row or pin it with its real source"));
    }
  }
  return out;
}

Result<std::vector<LintFinding>> lint_tables(std::string const& dir,
                                             std::optional<Recipe> const& recipe,
                                             ProblemDefaultFn const& default_config,
                                             FamilyCanProduceFn const& can_produce,
                                             LintOptions const& options) {
  namespace fs = std::filesystem;
  auto files = list_table_files(dir);
  if (!files.ok()) return files.error();
  std::vector<LintFinding> out;
  std::error_code ec;
  // Orphan manifests: a sidecar whose vLLM file is gone.
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::string const p = it->path().string();
    std::error_code exists_ec;
    if (p.ends_with(".json.moetune") && !fs::exists(p.substr(0, p.size() - 8), exists_ec) &&
        !exists_ec) {
      out.push_back(finding(LintKind::kManifestMismatch, p, std::nullopt,
                            "manifest without its vLLM file; regenerate the pair with `moetune "
                            "materialize` or delete the stale manifest"));
    }
  }
  for (auto const& path : *files) {
    std::string const base = fs::path(path).filename().string();
    auto vllm = [&]() -> Result<Table> {  // the text is freed before the manifest is read
      auto text = read_file(path);
      return text.ok() ? parse_vllm_table(*text, path) : Result<Table>(text.error());
    }();
    if (!vllm.ok()) {
      out.push_back(finding(LintKind::kLoadError, path, std::nullopt, vllm.error().to_string()));
      continue;
    }
    Table table = std::move(*vllm);
    auto mtext = read_file(manifest_path(path));
    if (mtext.ok()) {
      auto manifest = parse_manifest(*mtext, manifest_path(path));
      *mtext = std::string();  // the text is not needed past the parse
      if (!manifest.ok()) {
        out.push_back(
            finding(LintKind::kLoadError, path, std::nullopt, manifest.error().to_string()));
        continue;
      }
      auto mismatches = manifest_mismatches(*manifest, table, base, manifest_path(path));
      for (auto const& e : mismatches) {
        out.push_back(finding(LintKind::kManifestMismatch, path, std::nullopt, e.to_string()));
      }
      if (!mismatches.empty()) continue;
      table = std::move(*manifest);
    }
    std::string family = table.key.family;
    if (recipe.has_value()) {
      for (auto const& shape : recipe->shapes) {
        if (table_file_name(table_key_for(shape)) == base) family = shape.family;
      }
    }
    auto found = lint_table(table, path, family, default_config, can_produce, options);
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

}  // namespace moetune::core
