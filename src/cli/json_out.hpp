// JSON text the CLI prints for data that has no core type: tune's per-bucket results and show's
// whole table. Values of core types are printed by core/json_text.hpp (STYLE 3: no JSON library
// outside core/json_io); this file only joins those texts and quotes strings.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "core/table.hpp"
#include "tuner/sweep.hpp"

namespace moetune::cli {

/// A JSON string literal for `s` (quotes, backslashes and control characters escaped).
std::string json_quote(std::string_view s);
/// A JSON number for `v` (shortest round-trip form; non-finite values become null).
std::string json_number(double v);

/// The pinned config's median in a sweep's results; 0 when it was not measured ok.
double pinned_time_us(tuner::BucketResult const& sweep, core::MoeConfig const& pinned);

/// A table as one JSON object: {"file", "key", "policy", "has_manifest", "rows": [{"bucket",
/// "config", "source"}]}.
std::string table_json_text(core::Table const& table, std::string const& path);

/// Collects `moetune tune --json` output: {"shapes": [{"name", "table", "backend", "buckets":
/// [...]}]}; every call is a no-op when disabled.
class JsonOut {
 public:
  explicit JsonOut(bool enabled) : enabled_(enabled) {}
  void begin_shape(std::string const& name, std::string const& table, std::string const& backend);
  /// A pinned bucket; with `sweep` (tune --measure-pinned) also the sweep's answer and the pin's
  /// own time in it ("pinned_us", null when the pin is outside the search space or failed).
  void pinned_bucket(int64_t bucket, core::MoeConfig const& config,
                     tuner::BucketResult const* sweep = nullptr);
  void tuned_bucket(tuner::BucketResult const& r);
  void failed_bucket(int64_t bucket, std::string const& reason);
  void end_shape();
  /// Prints the object (when enabled).
  void finish(std::ostream& out) const;

 private:
  bool enabled_;
  std::vector<std::string> shapes_;
  std::string shape_head_;
  std::vector<std::string> buckets_;
};

}  // namespace moetune::cli
