// Report data loading and the HTML page; the pictures are report_svg.cpp. See report.hpp.
#include "bench/report.hpp"

#include <algorithm>
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

std::vector<ReportPoint> arm_points_from_deltas(std::vector<ReportDelta> const& deltas,
                                                CsvTable const& csv) {
  std::vector<ReportPoint> out;
  auto add = [&](std::string const& arm, ReportDelta const& d, double median_us,
                 std::string const& config) {
    std::string const series = arm + " | " + d.series;
    for (auto const& p : out) {
      if (p.series == series && p.m == d.m) return;  // the baseline repeats per other arm
    }
    ReportPoint p;
    p.series = series;
    p.m = d.m;
    p.time_us = median_us;
    p.config = config;
    out.push_back(std::move(p));
  };
  for (size_t r = 0; r < csv.rows.size() && r < deltas.size(); ++r) {
    add(deltas[r].arm_a, deltas[r], or_zero(csv.number(r, "a_median_us")), csv.at(r, "config_a"));
    add(deltas[r].arm_b, deltas[r], or_zero(csv.number(r, "b_median_us")), csv.at(r, "config_b"));
  }
  return out;
}

core::Result<ReportData> load_report_data(std::string const& path) {
  namespace fs = std::filesystem;
  ReportData data;
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (char const* name : {"bench.csv", "ab.csv"}) {
      if (fs::exists(fs::path(path) / name, ec)) files.push_back((fs::path(path) / name).string());
    }
    auto env = core::read_file((fs::path(path) / "env.json").string());
    if (env.ok()) data.envs.emplace_back(fs::path(path).filename().string(), *env);
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
      auto const arms = arm_points_from_deltas(*d, *csv);
      data.arm_points.insert(data.arm_points.end(), arms.begin(), arms.end());
      data.deltas.insert(data.deltas.end(), d->begin(), d->end());
    } else {
      auto p = points_from_csv(*csv, file);
      if (!p.ok()) return p.error();
      data.points.insert(data.points.end(), p->begin(), p->end());
    }
  }
  return data;
}

core::Result<ReportData> load_report_inputs(std::vector<std::string> const& paths) {
  if (paths.empty()) {
    return core::make_error(core::ErrorCode::kInvalidArgument, "report",
                            "no input; pass one or more folders or CSV files");
  }
  if (paths.size() == 1) return load_report_data(paths.front());
  ReportData all;
  std::vector<std::string> names;
  for (auto const& path : paths) {
    auto one = load_report_data(path);
    if (!one.ok()) return one.error();
    std::string name = one->title.empty() ? path : one->title;
    int const seen = static_cast<int>(std::count(names.begin(), names.end(), one->title));
    names.push_back(one->title);
    if (seen > 0) name += " (" + std::to_string(seen + 1) + ")";
    auto tag = [&](std::string const& series) { return name + " | " + series; };
    for (auto p : one->points) {
      p.series = tag(p.series);
      all.points.push_back(std::move(p));
    }
    for (auto p : one->arm_points) {
      p.series = tag(p.series);
      all.arm_points.push_back(std::move(p));
    }
    for (auto d : one->deltas) {
      d.series = tag(d.series);
      all.deltas.push_back(std::move(d));
    }
    for (auto const& [folder, env] : one->envs) all.envs.emplace_back(name, env);
    all.source += (all.source.empty() ? "" : ", ") + one->source;
    all.title += (all.title.empty() ? "" : ", ") + name;
  }
  all.title = std::to_string(paths.size()) + " runs: " + all.title;
  return all;
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
  }
  std::vector<ReportPoint> timed = d.points;
  timed.insert(timed.end(), d.arm_points.begin(), d.arm_points.end());
  if (!timed.empty()) {
    h += "<h2>Median time per M</h2>\n<p class=\"note\">one line per shape, input and A/B arm "
         "(arms: the median over rounds of each round's median); whiskers are p10/p90 where "
         "the run recorded them.</p>\n";
    h += time_svg(timed) + "\n";
    h += "<h2>Chosen config per bucket</h2>\n<p class=\"note\">colour and first line = GEMM1 "
         "tile (block m, n, k), second line = t/floor (bench points); hover a cell for both "
         "GEMMs' full configs.</p>\n";
    h += config_heatmap_svg(timed) + "\n";
  }
  if (!d.deltas.empty()) {
    h += "<h2>A/B deltas (B against A)</h2>\n<p class=\"note\">t_B / t_A - 1 with its 95% "
         "interval over rounds; the grey band is the margin; an interval that touches 0 or stays "
         "inside the band is no difference. &#8800; marks outputs that were not bitwise equal."
         "</p>\n";
    h += deltas_svg(d.deltas) + "\n";
  }
  for (auto const& [name, env] : d.envs) {
    h += "<h2>env.json of " + html_escape(name) + "</h2>\n<pre>" + html_escape(env) + "</pre>\n";
  }
  return h + "</body></html>\n";
}

}  // namespace moetune::bench
