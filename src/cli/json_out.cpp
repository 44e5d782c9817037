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

double pinned_time_us(tuner::BucketResult const& sweep, core::MoeConfig const& pinned) {
  for (tuner::CandidateResult const& c : sweep.results) {
    if (c.config == pinned && c.outcome == tuner::Outcome::kOk) return c.median_us;
  }
  return 0;
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

void JsonOut::begin_shape(std::string const& name, std::string const& table,
                          std::string const& backend) {
  if (!enabled_) return;
  shape_head_ = "{\"name\": " + json_quote(name) + ", \"table\": " + json_quote(table) +
                ", \"backend\": " + json_quote(backend);
  buckets_.clear();
}

void JsonOut::pinned_bucket(int64_t bucket, core::MoeConfig const& config,
                            tuner::BucketResult const* sweep) {
  if (!enabled_) return;
  std::string text = "{\"bucket\": " + std::to_string(bucket) +
                     ", \"outcome\": \"pinned\", \"winner\": " + core::to_json_text(config, -1);
  if (sweep != nullptr) {
    double const pinned_us = pinned_time_us(*sweep, config);
    text += ", \"pinned_us\": " + (pinned_us > 0 ? json_number(pinned_us) : "null") +
            ", \"sweep_winner\": " + json_quote(core::short_string(sweep->winner)) +
            ", \"sweep_us\": " + json_number(sweep->time_us) +
            ", \"default_us\": " + json_number(sweep->default_us);
  }
  buckets_.push_back(text + "}");
}

void JsonOut::tuned_bucket(tuner::BucketResult const& r) {
  if (!enabled_) return;
  buckets_.push_back(
      "{\"bucket\": " + std::to_string(r.bucket) +
      ", \"outcome\": \"tuned\", \"winner\": " + core::to_json_text(r.winner, -1) +
      ", \"winner_short\": " + json_quote(core::short_string(r.winner)) + ", \"time_us\": " +
      json_number(r.time_us) + ", \"default_us\": " + json_number(r.default_us) +
      ", \"margin\": " + json_number(tuner::margin(r.default_us, r.time_us)) +
      ", \"incumbent_kept\": " + (r.incumbent_kept ? "true" : "false") +
      ", \"candidates\": " + std::to_string(r.candidates) +
      ", \"rejected\": " + std::to_string(r.rejected) + ", \"wrong\": " + std::to_string(r.wrong) +
      ", \"failed\": " + std::to_string(r.failed) + ", \"digest\": " + json_quote(r.digest) + "}");
}

void JsonOut::failed_bucket(int64_t bucket, std::string const& reason) {
  if (!enabled_) return;
  buckets_.push_back("{\"bucket\": " + std::to_string(bucket) +
                     ", \"outcome\": \"no_survivor\", \"reason\": " + json_quote(reason) + "}");
}

void JsonOut::end_shape() {
  if (!enabled_) return;
  shapes_.push_back("    " + shape_head_ + ", \"buckets\": [\n      " +
                    join(buckets_, ",\n      ") + "\n    ]}");
}

void JsonOut::finish(std::ostream& out) const {
  if (!enabled_) return;
  out << "{\n  \"shapes\": [\n" << join(shapes_, ",\n") << "\n  ]\n}\n";
}

}  // namespace moetune::cli
