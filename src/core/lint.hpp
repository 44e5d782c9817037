// Lint: findings about shipped tables that load fine but serve badly or cannot be trusted.
// Backend-free: the default config and the family's feasibility come in as callbacks.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/recipe.hpp"
#include "core/result.hpp"
#include "core/table.hpp"

namespace moetune::core {

/// What a finding is about.
enum class LintKind {
  kTinyMShadow,          ///< a tiny-M row differs from the default with no measurement that it wins
  kUnreachableKey,       ///< no M in [1, max_m] resolves to this key (policies shadow it)
  kFamilyCannotProduce,  ///< the search family cannot produce this row's config
  kManifestMismatch,     ///< manifest vs file name, or manifest rows vs vLLM rows
  kLoadError,            ///< the file or its manifest does not load at all
};
/// "tiny_m_shadow", "unreachable_key", "family_cannot_produce", "manifest_mismatch", "load_error".
std::string_view to_string(LintKind k);

/// One finding. `bucket` is the row's M, or none for whole-file findings.
struct LintFinding {
  LintKind kind = LintKind::kLoadError;
  std::string file;
  std::optional<int64_t> bucket;
  std::string message;  ///< one line: what, seen vs expected, what to do

  /// "file[: bucket M]: kind: message".
  std::string to_string() const;
};

/// The backend's default config for a problem (num_tokens = M).
using ProblemDefaultFn = std::function<MoeConfig(MoeProblem const& problem)>;
/// Ok when `family` can produce `config` for `problem`, else the reason.
using FamilyCanProduceFn = std::function<Status(
    std::string const& family, MoeProblem const& problem, MoeConfig const& config)>;

struct LintOptions {
  int64_t max_m = 0;           ///< serving range is [1, max_m]; 0 = up to the largest key
  int64_t tiny_m_bucket = 32;  ///< buckets <= this (or <= the policy's threshold) are tiny-M rows
};

/// The problem a table's key describes, at M (unknown fields stay 0 / silu; arch "cpu" for the
/// cpu_tiled family, else the default sm_90a; dtype=fp8_w8a8 gives quant fp8_block with a
/// block_shape, else fp8_tensor).
MoeProblem problem_for_key(TableKey const& key, int64_t m);

/// True when `source` records a measurement showing the row beats the default:
/// numbers has both "time_us" and "default_us" and time_us < default_us.
bool source_beats_default(std::optional<Source> const& source);

/// Keys no M in [1, max_m] resolves to under the table's policy (ascending).
std::vector<int64_t> unreachable_keys(Table const& table, int64_t max_m);

/// Checks (a) tiny-M shadowing, (b) unreachable keys, (c) rows `family` cannot produce (skipped
/// when family is "" or can_produce is empty) for one loaded table. `file` labels findings.
std::vector<LintFinding> lint_table(Table const& table, std::string const& file,
                                    std::string const& family,
                                    ProblemDefaultFn const& default_config,
                                    FamilyCanProduceFn const& can_produce,
                                    LintOptions const& options = {});

/// Lints every table in `dir`: (d) each manifest against its vLLM file (and orphan manifests),
/// then lint_table on each file that loads. The family of a table is that of the recipe shape
/// that writes it when `recipe` is given, else the manifest key's family. A missing dir is
/// kNotFound; broken files are kLoadError findings, not errors.
Result<std::vector<LintFinding>> lint_tables(std::string const& dir,
                                             std::optional<Recipe> const& recipe,
                                             ProblemDefaultFn const& default_config,
                                             FamilyCanProduceFn const& can_produce,
                                             LintOptions const& options = {});

}  // namespace moetune::core
