// Resolver: M -> bucket -> row. The default rule is the engines' (nearest key by |key - M|, ties
// to the key first in the file, which is the smaller key in a sorted file); the table's
// ResolverPolicy may gate tiny M or far-beyond-range M to the backend's default config. Every
// answer says which rule chose it and why (explain).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/source.hpp"
#include "core/table.hpp"
#include "core/table_lookup.hpp"

namespace moetune::core {

/// Which rule chose the config.
enum class Rule {
  kExactKey,     ///< M is a key
  kNearestKey,   ///< vLLM's nearest-key rule picked another key
  kTinyMGate,    ///< policy: M <= tiny_m_threshold -> default config
  kBeyondRange,  ///< policy: M > factor * largest key -> default config
  kEmptyTable,   ///< no rows -> default config
};
/// "exact_key", "nearest_key", "tiny_m_gate", "beyond_range", "empty_table".
std::string_view to_string(Rule r);

/// The answer for one M.
struct Resolution {
  int64_t m = 0;
  std::optional<int64_t> key;  ///< the bucket used; none when a default was used
  Rule rule = Rule::kNearestKey;
  MoeConfig config;
  std::optional<Source> source;  ///< the row's source; for defaults, kind "default"
  std::string explain;  ///< one sentence: "M=115 -> key 113 (nearest key, |113-115|=2; ...)"
  /// The row's engine fields moetune does not model (TableRow::vllm_extra), name -> JSON text.
  std::map<std::string, std::string> engine_fields;
  /// Launch fields the row leaves out (TableRow::absent_fields): config holds Triton's defaults.
  std::vector<std::string> absent_fields;
};

/// The backend's default config for (problem with num_tokens = M). Supplied by the caller so
/// core/ stays backend-free.
using DefaultConfigFn = std::function<MoeConfig(int64_t m)>;

/// The engines' rule alone, `min(keys in file order, key=|key - M|)`: the key nearest to m, ties
/// to the key listed first in the file (the smaller key when keys ascend, as in every table
/// moetune writes). Empty table -> nullopt.
std::optional<int64_t> nearest_key(Table const& table, int64_t m);

/// Resolves M against a table with its policy. Total: every M >= 0 gets an answer.
Resolution resolve(Table const& table, int64_t m, DefaultConfigFn const& default_config);
/// The same answer from a table opened for lookups, reading only the row it serves. Fails only
/// when that row does not read: load_table's error for the table.
Result<Resolution> resolve(TableLookup& table, int64_t m, DefaultConfigFn const& default_config);

}  // namespace moetune::core
