#include "cli/json_out.hpp"

#include "core/flat_json.hpp"

#include <cmath>
#include <cstdio>

#include "core/json_text.hpp"

namespace moetune::cli {

std::string join(std::vector<std::string> const& items, std::string const& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

// One escaping and number rule for every JSON line moetune writes (core/flat_json.hpp).
std::string json_quote(std::string_view s) { return core::json_string(s); }

std::string json_number(double v) { return core::json_double(v); }

std::string table_json_text(core::Table const& table, std::string const& path) {
  std::vector<std::string> rows;
  for (int64_t const bucket : core::keys_in_file_order(table)) {
    core::TableRow const& row = table.rows.at(bucket);
    std::vector<std::string> fields;
    for (auto const& [name, text] : row.vllm_extra) {
      fields.push_back(json_quote(name) + ": " + text);
    }
    std::vector<std::string> absent;
    for (auto const& name : row.absent_fields) absent.push_back(json_quote(name));
    rows.push_back("    {\"bucket\": " + std::to_string(bucket) +
                   ", \"config\": " + core::to_json_text(row.config, -1) +
                   ", \"source\": " + (row.source ? core::to_json_text(*row.source, -1) : "null") +
                   ", \"engine_fields\": {" + join(fields, ", ") + "}, \"absent_fields\": [" +
                   join(absent, ", ") + "]}");
  }
  return "{\n  \"file\": " + json_quote(path) +
         ",\n  \"key\": " + core::to_json_text(table.key, -1) +
         ",\n  \"policy\": " + core::to_json_text(table.policy, -1) +
         ",\n  \"has_manifest\": " + (table.has_manifest ? "true" : "false") + ",\n  \"rows\": [" +
         (rows.empty() ? "" : "\n" + join(rows, ",\n") + "\n  ") + "]\n}\n";
}

}  // namespace moetune::cli
