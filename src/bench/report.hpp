// `moetune report`: one self-contained HTML page (inline SVG, no external assets) from one or more
// bench or A/B folders or bench CSVs, so people can look rather than read:
//   1. roofline view: t/floor per M per shape (p10/p90 whiskers, the floor at 1.0), bench points
//      only (a t/floor divides by the floor of the same run; A/B arms measure no floor);
//   2. median time per M, one series per shape, input and A/B arm (log-log);
//   3. heatmap of the chosen config per bucket (colour = config, text = tile and t/floor), rows
//      per shape, input and arm;
//   4. A/B deltas with their 95% intervals (margin band shaded; verdicts as ab.csv has them).
// With several inputs every series is prefixed with its input's name ("<folder> | <series>").
// Reads bench.csv (bench_csv_version 1), ab.csv (ab_csv_version 1) and the kernel benchmark's
// CSV (bench/sm90_bench.cpp: commit,date,device,...,ratio,...,config).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench/csv.hpp"
#include "core/result.hpp"

namespace moetune::bench {

/// One measured point, whatever CSV it came from.
struct ReportPoint {
  std::string series;  ///< shape name + sizes, e.g. "S1 E=128 K=2688 I=1856 top_k=6 relu2"
  int64_t m = 0;
  double time_us = 0, p10_us = 0, p90_us = 0, floor_us = 0, ratio = 0;
  std::string bound;   ///< "bw" | "compute" | ""
  std::string config;  ///< short_string (gemm1|gemm2 when they differ)
  std::string digest;
  double sm_clock_mhz = 0, power_w = 0;
};

/// One A/B comparison, as ab.csv holds it.
struct ReportDelta {
  std::string series;
  int64_t m = 0;
  std::string arm_a, arm_b, verdict;
  double delta = 0, ci_low = 0, ci_high = 0, margin = 0;
  bool digests_equal = true, expected_equal = true;
};

/// Everything one page shows.
struct ReportData {
  std::string title;
  std::string source;  ///< the files read
  /// (input name, env.json text) of every input folder that has one (shown verbatim).
  std::vector<std::pair<std::string, std::string>> envs;
  std::vector<ReportPoint> points;      ///< bench points: time, spread, floor, config
  std::vector<ReportPoint> arm_points;  ///< A/B arms ("<arm> | <series>"): median, config
  std::vector<ReportDelta> deltas;
};

/// Points from a bench.csv or sm90_bench CSV (told apart by their header). Fails (kParse) on a
/// CSV that is neither, naming the file and the columns it lacks.
core::Result<std::vector<ReportPoint>> points_from_csv(CsvTable const& csv,
                                                       std::string const& file);
core::Result<std::vector<ReportDelta>> deltas_from_csv(CsvTable const& csv,
                                                       std::string const& file);
/// One point per arm and A/B point of an ab.csv (the median over rounds of the per-round medians,
/// the arm's config; no floor, no spread), series "<arm> | <series>".
std::vector<ReportPoint> arm_points_from_deltas(std::vector<ReportDelta> const& deltas,
                                                CsvTable const& csv);

/// Loads a folder (bench.csv and/or ab.csv, env.json) or one CSV file. kNotFound when the path
/// holds none of them.
core::Result<ReportData> load_report_data(std::string const& path);
/// Loads every path (as load_report_data) onto one page. With more than one, each series, arm
/// and delta is prefixed with its input's name (the folder or file name; repeated names get
/// " (2)", ...). Fails on the first input that fails, or when `paths` is empty.
core::Result<ReportData> load_report_inputs(std::vector<std::string> const& paths);

/// The HTML page.
std::string render_report_html(ReportData const& data);

// ---- the pictures (report_svg.cpp) ----
std::string roofline_svg(std::vector<ReportPoint> const& points);
/// Median time (us) per M, log-log, one line per series; p10/p90 whiskers where known.
std::string time_svg(std::vector<ReportPoint> const& points);
std::string config_heatmap_svg(std::vector<ReportPoint> const& points);
std::string deltas_svg(std::vector<ReportDelta> const& deltas);
/// Text with &, <, >, " escaped.
std::string html_escape(std::string const& s);

}  // namespace moetune::bench
