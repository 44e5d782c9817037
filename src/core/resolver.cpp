// The engines' nearest-key rule plus the two opt-in policies, with an explain sentence per answer.
#include "core/resolver.hpp"

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

}  // namespace

std::optional<int64_t> nearest_key(Table const& table, int64_t m) {
  if (table.rows.empty()) return std::nullopt;
  if (!table.key_order.empty()) {
    // The engines' min(keys, key=lambda x: abs(x - M)) over keys in file order: the first key
    // at the least distance wins, whatever its size.
    std::optional<int64_t> best;
    for (int64_t const key : keys_in_file_order(table)) {
      if (!best || distance(key, m) < distance(*best, m)) best = key;
    }
    return best;
  }
  // The first key >= m and the key before it are the only candidates; strict '<' on the upper
  // distance sends ties to the smaller key, as vLLM's min() over keys in ascending file order.
  auto hi = table.rows.lower_bound(m);
  if (hi == table.rows.end()) return std::prev(hi)->first;
  if (hi == table.rows.begin()) return hi->first;
  auto lo = std::prev(hi);
  // Distances compared as unsigned to stay defined for extreme keys.
  uint64_t const d_lo = static_cast<uint64_t>(m) - static_cast<uint64_t>(lo->first);
  uint64_t const d_hi = static_cast<uint64_t>(hi->first) - static_cast<uint64_t>(m);
  return d_hi < d_lo ? hi->first : lo->first;
}

namespace {

std::string source_phrase(std::optional<Source> const& s) {
  if (!s.has_value()) return "row has no source (plain vLLM file)";
  std::string text = "row source: " + (s->kind.empty() ? std::string("?") : s->kind);
  if (!s->device.empty()) text += " on " + s->device;
  if (!s->date.empty()) text += " " + s->date;
  return text;
}

Resolution from_default(Table const& table, int64_t m, Rule rule, std::string why,
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
  (void)table;
  return r;
}

}  // namespace

Resolution resolve(Table const& table, int64_t m, DefaultConfigFn const& default_config) {
  // Negative M cannot come from a batch; treat it as 0 so the resolver stays total.
  if (m < 0) m = 0;
  if (table.rows.empty()) {
    return from_default(table, m, Rule::kEmptyTable, "the table has no rows", default_config);
  }
  ResolverPolicy const& policy = table.policy;
  if (policy.tiny_m_threshold.has_value() && m <= *policy.tiny_m_threshold) {
    return from_default(table, m, Rule::kTinyMGate,
                        "M <= tiny_m_threshold " + std::to_string(*policy.tiny_m_threshold),
                        default_config);
  }
  int64_t const largest = table.rows.rbegin()->first;
  if (policy.beyond_range_factor.has_value() &&
      static_cast<double>(m) > *policy.beyond_range_factor * static_cast<double>(largest)) {
    char factor[32];
    std::snprintf(factor, sizeof factor, "%g", *policy.beyond_range_factor);
    return from_default(table, m, Rule::kBeyondRange,
                        "M > " + std::string(factor) + " x largest key " + std::to_string(largest),
                        default_config);
  }
  int64_t const key = *nearest_key(table, m);
  TableRow const& row = table.rows.at(key);
  Resolution r;
  r.m = m;
  r.key = key;
  r.rule = key == m ? Rule::kExactKey : Rule::kNearestKey;
  r.config = row.config;
  r.source = row.source;
  r.engine_fields = row.vllm_extra;
  r.absent_fields = row.absent_fields;
  std::string const ties = table.key_order.empty() ? "ties to the smaller key"
                                                   : "ties to the key listed first in the file";
  std::string const why = r.rule == Rule::kExactKey
                              ? "exact key"
                              : "nearest key, |" + std::to_string(key) + "-" + std::to_string(m) +
                                    "|=" + std::to_string(distance(key, m)) + ", " + ties;
  r.explain = "M=" + std::to_string(m) + " -> key " + std::to_string(key) + " (" + why + "; " +
              source_phrase(row.source) + ")";
  return r;
}

}  // namespace moetune::core
