// Report data loading and the HTML page; the pictures are report_svg.cpp. See report.hpp.
#include "bench/report.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "core/atomic_file.hpp"

namespace moetune::bench {
namespace {

core::Error lacks(std::string const& file, std::string const& what,
                  std::vector<std::string> const& missing) {
  std::string cols;
  for (auto const& c : missing) cols += (cols.empty() ? "" : ", ") + c;
  return core::make_error(core::ErrorCode::kParse, file,
                          "not a " + what + ": the header lacks " + cols +
                              "; expected bench.csv (moetune bench), ab.csv (moetune ab) or a "
                              "bench/sm90_bench CSV");
}

std::vector<std::string> missing_columns(CsvTable const& csv, std::vector<std::string> const& c) {
  std::vector<std::string> out;
  for (auto const& name : c) {
    if (!csv.has(name)) out.push_back(name);
  }
  return out;
}

double or_zero(double v) { return std::isfinite(v) ? v : 0; }

}  // namespace

core::Result<std::vector<ReportPoint>> points_from_csv(CsvTable const& csv,
                                                       std::string const& file) {
  // bench.csv names its series "series"; the kernel benchmark's CSV names it "shape".
  std::string const series_col = csv.has("series") ? "series" : "shape";
  auto missing = missing_columns(csv, {series_col, "E", "K", "I", "top_k", "act", "M", "time_us",
                                       "floor_us", "ratio", "config"});
  if (!missing.empty()) return lacks(file, "bench CSV", missing);
  std::vector<ReportPoint> out;
  for (size_t r = 0; r < csv.rows.size(); ++r) {
    ReportPoint p;
    p.series = csv.at(r, series_col) + " E=" + csv.at(r, "E") + " K=" + csv.at(r, "K") +
               " I=" + csv.at(r, "I") + " top_k=" + csv.at(r, "top_k") + " " + csv.at(r, "act");
    p.m = static_cast<int64_t>(csv.number(r, "M"));
    p.time_us = or_zero(csv.number(r, "time_us"));
    p.p10_us = or_zero(csv.number(r, "p10_us"));
    p.p90_us = or_zero(csv.number(r, "p90_us"));
    p.floor_us = or_zero(csv.number(r, "floor_us"));
    p.ratio = or_zero(csv.number(r, "ratio"));
    p.bound = csv.at(r, "bound");
    p.config = csv.at(r, "config");
    p.digest = csv.at(r, "digest");
    p.sm_clock_mhz = or_zero(csv.number(r, "sm_clock_mhz"));
    p.power_w = or_zero(csv.number(r, "power_w"));
    out.push_back(std::move(p));
  }
  return out;
}

core::Result<std::vector<ReportDelta>> deltas_from_csv(CsvTable const& csv,
                                                       std::string const& file) {
  auto missing = missing_columns(csv, {"ab_csv_version", "series", "M", "arm_a", "arm_b", "delta",
                                       "ci_low", "ci_high", "margin", "verdict", "digests_equal"});
  if (!missing.empty()) return lacks(file, "A/B CSV", missing);
  std::vector<ReportDelta> out;
  for (size_t r = 0; r < csv.rows.size(); ++r) {
    ReportDelta d;
    d.series = csv.at(r, "series");
    d.m = static_cast<int64_t>(csv.number(r, "M"));
    d.arm_a = csv.at(r, "arm_a");
    d.arm_b = csv.at(r, "arm_b");
    d.verdict = csv.at(r, "verdict");
    d.delta = or_zero(csv.number(r, "delta"));
    d.ci_low = or_zero(csv.number(r, "ci_low"));
    d.ci_high = or_zero(csv.number(r, "ci_high"));
    d.margin = or_zero(csv.number(r, "margin"));
    d.digests_equal = csv.at(r, "digests_equal") == "1";
    d.expected_equal = csv.at(r, "expected_equal") != "0";
    out.push_back(std::move(d));
  }
  return out;
}

core::Result<ReportData> load_report_data(std::string const& path) {
  namespace fs = std::filesystem;
  ReportData data;
  std::vector<std::string> files;
  if (fs::is_directory(path)) {
    for (char const* name : {"bench.csv", "ab.csv"}) {
      if (fs::exists(fs::path(path) / name)) files.push_back((fs::path(path) / name).string());
    }
    auto env = core::read_file((fs::path(path) / "env.json").string());
    if (env.ok()) data.env_json = *env;
    if (files.empty()) {
      return core::make_error(core::ErrorCode::kNotFound, path,
                              "holds neither bench.csv nor ab.csv; pass a folder written by "
                              "`moetune bench` or `moetune ab`, or a CSV file");
    }
  } else {
    files.push_back(path);
  }
  data.title = fs::path(path).filename().string();
  if (data.title.empty()) data.title = fs::path(path).parent_path().filename().string();
  for (auto const& file : files) {
    auto text = core::read_file(file);
    if (!text.ok()) return text.error();
    auto csv = parse_csv(*text, file);
    if (!csv.ok()) return csv.error();
    data.source += (data.source.empty() ? "" : ", ") + file;
    if (csv->has("ab_csv_version")) {
      auto d = deltas_from_csv(*csv, file);
      if (!d.ok()) return d.error();
      data.deltas.insert(data.deltas.end(), d->begin(), d->end());
    } else {
      auto p = points_from_csv(*csv, file);
      if (!p.ok()) return p.error();
      data.points.insert(data.points.end(), p->begin(), p->end());
    }
  }
  return data;
}

namespace {

std::string summary_table(std::vector<ReportPoint> const& points) {
  std::map<std::string, std::pair<double, int>> geo;
  std::map<std::string, std::string> bounds;
  for (auto const& p : points) {
    if (p.ratio <= 0) continue;
    geo[p.series].first += std::log(p.ratio);
    geo[p.series].second += 1;
  }
  std::string out = "<table><tr><th>shape</th><th>points</th><th>geomean t/floor</th></tr>";
  for (auto const& [s, g] : geo) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.3f", std::exp(g.first / g.second));
    out += "<tr><td>" + html_escape(s) + "</td><td>" + std::to_string(g.second) + "</td><td>" +
           buf + "</td></tr>";
  }
  return out + "</table>";
}

}  // namespace

std::string render_report_html(ReportData const& d) {
  std::string h =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>moetune report: " +
      html_escape(d.title) +
      "</title>\n<style>body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:"
      "1200px}h1{font-size:20px}h2{font-size:16px;margin-top:28px}table{border-collapse:"
      "collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
      "pre{background:#f6f6f6;padding:8px;font-size:12px;overflow:auto}.note{color:#555;"
      "font-size:13px}</style></head><body>\n";
  h += "<h1>moetune report: " + html_escape(d.title) + "</h1>\n";
  h += "<p class=\"note\">from " + html_escape(d.source) + "</p>\n";
  if (!d.points.empty()) {
    h += "<h2>t/floor per M (roofline view)</h2>\n<p class=\"note\">time over the floor of the "
         "same run, floor = max(bytes_min / copy bandwidth, flops / matmul rate); 1.0 is the "
         "floor; whiskers are p10/p90.</p>\n";
    h += roofline_svg(d.points) + "\n" + summary_table(d.points) + "\n";
    h += "<h2>Chosen config per bucket</h2>\n<p class=\"note\">colour and first line = GEMM1 "
         "tile (block m, n, k), second line = t/floor; hover a cell for both GEMMs' full "
         "configs.</p>\n";
    h += config_heatmap_svg(d.points) + "\n";
  }
  if (!d.deltas.empty()) {
    h += "<h2>A/B deltas (B against A)</h2>\n<p class=\"note\">t_B / t_A - 1 with its 95% "
         "interval over rounds; the grey band is the margin; an interval that touches 0 or stays "
         "inside the band is no difference. &#8800; marks outputs that were not bitwise equal."
         "</p>\n";
    h += deltas_svg(d.deltas) + "\n";
  }
  if (!d.env_json.empty()) h += "<h2>env.json</h2>\n<pre>" + html_escape(d.env_json) + "</pre>\n";
  return h + "</body></html>\n";
}

}  // namespace moetune::bench
