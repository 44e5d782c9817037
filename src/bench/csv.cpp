// CSV fields and parsing; see csv.hpp.
#include "bench/csv.hpp"

#include <cmath>
#include <cstdlib>

namespace moetune::bench {

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string csv_line(std::vector<std::string> const& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + csv_field(fields[i]);
  return out;
}

int CsvTable::column(std::string_view name) const {
  for (size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return static_cast<int>(i);
  }
  return -1;
}

std::string const& CsvTable::at(size_t row, std::string_view name) const {
  static const std::string kEmpty;
  int const c = column(name);
  return c < 0 ? kEmpty : rows[row][static_cast<size_t>(c)];
}

double CsvTable::number(size_t row, std::string_view name) const {
  std::string const& s = at(row, name);
  if (s.empty()) return std::nan("");
  char* end = nullptr;
  double const v = std::strtod(s.c_str(), &end);
  return end != nullptr && *end == '\0' ? v : std::nan("");
}

core::Result<CsvTable> parse_csv(std::string_view text, std::string const& where) {
  CsvTable table;
  std::vector<std::string> record;
  std::string field;
  bool quoted = false, any = false;
  int line = 1, record_line = 1;
  auto end_record = [&]() -> core::Status {
    record.push_back(field);
    field.clear();
    bool const blank = record.size() == 1 && record[0].empty();
    if (!blank) {
      if (table.header.empty()) {
        table.header = record;
      } else if (record.size() != table.header.size()) {
        return core::make_error(core::ErrorCode::kParse, where + ":" + std::to_string(record_line),
                                std::to_string(record.size()) + " fields but the header has " +
                                    std::to_string(table.header.size()));
      } else {
        table.rows.push_back(record);
      }
    }
    record.clear();
    record_line = line;
    return core::Status::Ok();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char const c = text[i];
    any = true;
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      record.push_back(field);
      field.clear();
    } else if (c == '\n') {
      ++line;
      MOETUNE_RETURN_IF_ERROR(end_record());
    } else if (c != '\r') {
      field += c;
    }
  }
  if (quoted) {
    return core::make_error(core::ErrorCode::kParse, where + ":" + std::to_string(record_line),
                            "a quoted field is not closed before the end of the file");
  }
  if (any && (!field.empty() || !record.empty())) MOETUNE_RETURN_IF_ERROR(end_record());
  if (table.header.empty()) {
    return core::make_error(core::ErrorCode::kParse, where, "empty CSV: no header row");
  }
  return table;
}

}  // namespace moetune::bench
