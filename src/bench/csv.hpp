// CSV as the archives use it: a header row, one record per line, fields quoted only when they hold
// a comma, quote or newline. Readers map columns by header name, so columns may be added later.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace moetune::bench {

/// A field, quoted when needed.
std::string csv_field(std::string_view s);
/// Fields joined into one line (no newline).
std::string csv_line(std::vector<std::string> const& fields);

/// A parsed CSV: header and rows of the same width.
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;

  /// Column index of `name`, or -1.
  int column(std::string_view name) const;
  bool has(std::string_view name) const { return column(name) >= 0; }
  /// The value in `row` of column `name`, "" when the column is missing.
  std::string const& at(size_t row, std::string_view name) const;
  double number(size_t row, std::string_view name) const;  ///< NaN when missing or not a number
};

/// Parses CSV text; `where` names the file in errors. A row with a different number of fields
/// than the header is kParse naming "where:line".
core::Result<CsvTable> parse_csv(std::string_view text, std::string const& where);

}  // namespace moetune::bench
