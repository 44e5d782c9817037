// The engines' nearest-key rule plus the two opt-in policies, with an explain sentence per answer.
#include "core/resolver.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>

namespace moetune::core {

std::string_view to_string(Rule r) {
  switch (r) {
    case Rule::kExactKey: return "exact_key";
    case Rule::kNearestKey: return "nearest_key";
    case Rule::kTinyMGate: return "tiny_m_gate";
    case Rule::kBeyondRange: return "beyond_range";
    case Rule::kEmptyTable: return "empty_table";
  }
  return "nearest_key";
}

namespace {

uint64_t distance(int64_t key, int64_t m) {
  // As unsigned, to stay defined for extreme keys.
  return key > m ? static_cast<uint64_t>(key) - static_cast<uint64_t>(m)
                 : static_cast<uint64_t>(m) - static_cast<uint64_t>(key);
}

int64_t key_of(std::map<int64_t, TableRow>::const_iterator it) { return it->first; }
int64_t key_of(std::vector<int64_t>::const_iterator it) { return *it; }
auto first_not_below(std::map<int64_t, TableRow> const& rows, int64_t m) {
  return rows.lower_bound(m);
}
auto first_not_below(std::vector<int64_t> const& keys, int64_t m) {
  return std::lower_bound(keys.begin(), keys.end(), m);
}

/// The engines' rule over keys that ascend in the file (a table's rows, or its sorted keys).
template <class Keys>
int64_t nearest_ascending(Keys const& keys, int64_t m) {
  // The first key >= m and the key before it are the only candidates; strict '<' on the upper
  // distance sends ties to the smaller key, as vLLM's min() over keys in ascending file order.
  auto hi = first_not_below(keys, m);
  if (hi == keys.end()) return key_of(std::prev(hi));
  if (hi == keys.begin()) return key_of(hi);
  auto lo = std::prev(hi);
  return distance(key_of(hi), m) < distance(key_of(lo), m) ? key_of(hi) : key_of(lo);
}

/// The engines' min(keys, key=lambda x: abs(x - M)) over keys in file order: the first key at
/// the least distance wins, whatever its size.
int64_t nearest_in_file_order(std::vector<int64_t> const& keys, int64_t m) {
  int64_t best = keys.front();
  for (int64_t const key : keys) {
    if (distance(key, m) < distance(best, m)) best = key;
  }
  return best;
}

}  // namespace

std::optional<int64_t> nearest_key(Table const& table, int64_t m) {
  if (table.rows.empty()) return std::nullopt;
  if (!table.key_order.empty()) return nearest_in_file_order(keys_in_file_order(table), m);
  return nearest_ascending(table.rows, m);
}

namespace {

std::string source_phrase(std::optional<Source> const& s) {
  if (!s.has_value()) return "row has no source (plain vLLM file)";
  std::string text = "row source: " + (s->kind.empty() ? std::string("?") : s->kind);
  if (!s->device.empty()) text += " on " + s->device;
  if (!s->date.empty()) text += " " + s->date;
  return text;
}

Resolution from_default(int64_t m, Rule rule, std::string why,
                        DefaultConfigFn const& default_config) {
  Resolution r;
  r.m = m;
  r.rule = rule;
  if (default_config) r.config = default_config(m);
  Source source;
  source.kind = "default";
  r.source = source;
  r.explain = "M=" + std::to_string(m) + " -> default config (" + std::string(to_string(rule)) +
              ": " + why + ")";
  return r;
}

/// The answers the policy gives before any key is looked at: the default config for an empty
/// table, a tiny M, or an M far beyond the largest key.
std::optional<Resolution> policy_default(ResolverPolicy const& policy,
                                         std::optional<int64_t> largest, int64_t m,
                                         DefaultConfigFn const& default_config) {
  if (!largest) {
    return from_default(m, Rule::kEmptyTable, "the table has no rows", default_config);
  }
  if (policy.tiny_m_threshold.has_value() && m <= *policy.tiny_m_threshold) {
    return from_default(m, Rule::kTinyMGate,
                        "M <= tiny_m_threshold " + std::to_string(*policy.tiny_m_threshold),
                        default_config);
  }
  if (policy.beyond_range_factor.has_value() &&
      static_cast<double>(m) > *policy.beyond_range_factor * static_cast<double>(*largest)) {
    char factor[32];
    std::snprintf(factor, sizeof factor, "%g", *policy.beyond_range_factor);
    return from_default(m, Rule::kBeyondRange,
                        "M > " + std::string(factor) + " x largest key " + std::to_string(*largest),
                        default_config);
  }
  return std::nullopt;
}

/// The answer served by the row at `key`; `file_order_ties`: the file's keys do not ascend.
Resolution from_row(int64_t m, int64_t key, TableRow const& row, bool file_order_ties) {
  Resolution r;
  r.m = m;
  r.key = key;
  r.rule = key == m ? Rule::kExactKey : Rule::kNearestKey;
  r.config = row.config;
  r.source = row.source;
  r.engine_fields = row.vllm_extra;
  r.absent_fields = row.absent_fields;
  std::string const ties =
      file_order_ties ? "ties to the key listed first in the file" : "ties to the smaller key";
  std::string const why = r.rule == Rule::kExactKey
                              ? "exact key"
                              : "nearest key, |" + std::to_string(key) + "-" + std::to_string(m) +
                                    "|=" + std::to_string(distance(key, m)) + ", " + ties;
  r.explain = "M=" + std::to_string(m) + " -> key " + std::to_string(key) + " (" + why + "; " +
              source_phrase(row.source) + ")";
  return r;
}

}  // namespace

Resolution resolve(Table const& table, int64_t m, DefaultConfigFn const& default_config) {
  // Negative M cannot come from a batch; treat it as 0 so the resolver stays total.
  if (m < 0) m = 0;
  std::optional<int64_t> const largest =
      table.rows.empty() ? std::nullopt : std::optional(table.rows.rbegin()->first);
  if (auto d = policy_default(table.policy, largest, m, default_config)) return *std::move(d);
  int64_t const key = *nearest_key(table, m);
  return from_row(m, key, table.rows.at(key), !table.key_order.empty());
}

Result<Resolution> resolve(TableLookup& table, int64_t m, DefaultConfigFn const& default_config) {
  if (m < 0) m = 0;
  std::vector<int64_t> const& keys = table.keys();
  std::optional<int64_t> const largest = keys.empty() ? std::nullopt : std::optional(keys.back());
  Table const& head = table.head();
  if (auto d = policy_default(head.policy, largest, m, default_config)) return *std::move(d);
  // A lookup's key_order lists every key (no row is added after reading).
  int64_t const key = head.key_order.empty() ? nearest_ascending(keys, m)
                                             : nearest_in_file_order(head.key_order, m);
  auto row = table.row(key);
  if (!row.ok()) return row.error();
  return from_row(m, key, *row, !head.key_order.empty());
}

}  // namespace moetune::core
