// JSON text the CLI prints for data that has no core type: show's whole table (tune's report is
// tune_report.hpp). Values of core types are printed by core/json_text.hpp (STYLE 3: no JSON
// library outside core/json_io); this file only joins those texts and quotes strings.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "core/table.hpp"

namespace moetune::cli {

/// A JSON string literal for `s` (quotes, backslashes and control characters escaped).
std::string json_quote(std::string_view s);
/// items joined by sep ("a, b, c").
std::string join(std::vector<std::string> const& items, std::string const& sep);
/// A JSON number for `v` (shortest round-trip form; non-finite values become null).
std::string json_number(double v);

/// A table as one JSON object: {"file", "key", "policy", "has_manifest", "rows": [{"bucket",
/// "config", "source", "engine_fields", "absent_fields"}]}, rows in file order. engine_fields
/// holds the row's unmodelled engine fields with their values as in the file.
std::string table_json_text(core::Table const& table, std::string const& path);

}  // namespace moetune::cli
