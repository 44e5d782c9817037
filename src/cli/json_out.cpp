#include "cli/json_out.hpp"

#include <cmath>
#include <cstdio>

#include "core/json_text.hpp"

namespace moetune::cli {
namespace {

std::string join(std::vector<std::string> const& items, std::string const& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

}  // namespace

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  // Prefer the shortest form that reads back to the same double.
  for (int precision = 1; precision < 17; ++precision) {
    char shorter[32];
    std::snprintf(shorter, sizeof(shorter), "%.*g", precision, v);
    if (std::strtod(shorter, nullptr) == v) return shorter;
  }
  return buf;
}

std::string table_json_text(core::Table const& table, std::string const& path) {
  std::vector<std::string> rows;
  for (auto const& [bucket, row] : table.rows) {
    rows.push_back("    {\"bucket\": " + std::to_string(bucket) +
                   ", \"config\": " + core::to_json_text(row.config, -1) + ", \"source\": " +
                   (row.source ? core::to_json_text(*row.source, -1) : "null") + "}");
  }
  return "{\n  \"file\": " + json_quote(path) +
         ",\n  \"key\": " + core::to_json_text(table.key, -1) +
         ",\n  \"policy\": " + core::to_json_text(table.policy, -1) +
         ",\n  \"has_manifest\": " + (table.has_manifest ? "true" : "false") + ",\n  \"rows\": [" +
         (rows.empty() ? "" : "\n" + join(rows, ",\n") + "\n  ") + "]\n}\n";
}

}  // namespace moetune::cli
