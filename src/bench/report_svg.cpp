// The report's pictures as inline SVG; see report.hpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "bench/report.hpp"

namespace moetune::bench {
namespace {

const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string colour(size_t i) {
  if (i < std::size(kPalette)) return kPalette[i];
  char buf[32];
  std::snprintf(buf, sizeof(buf), "hsl(%d,55%%,%d%%)", static_cast<int>((i * 47) % 360),
                55 + static_cast<int>(i % 3) * 10);
  return buf;
}

std::string fmt(double v, char const* f = "%.1f") {
  char buf[32];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

std::string text(double x, double y, std::string const& s, char const* extra = "") {
  return "<text x=\"" + fmt(x) + "\" y=\"" + fmt(y) + "\" " + extra + ">" + html_escape(s) +
         "</text>";
}

std::string line(double x1, double y1, double x2, double y2, std::string const& stroke,
                 char const* extra = "") {
  return "<line x1=\"" + fmt(x1) + "\" y1=\"" + fmt(y1) + "\" x2=\"" + fmt(x2) + "\" y2=\"" +
         fmt(y2) + "\" stroke=\"" + stroke + "\" " + extra + "/>";
}

std::vector<std::string> series_order(std::vector<ReportPoint> const& points) {
  std::vector<std::string> out;
  for (auto const& p : points) {
    if (std::find(out.begin(), out.end(), p.series) == out.end()) out.push_back(p.series);
  }
  return out;
}

/// Pixels a label of `chars` characters needs at font-size 11 (about 6.2 px a character).
double label_px(size_t chars) { return 6.2 * static_cast<double>(chars) + 16; }

size_t longest(std::vector<std::string> const& labels) {
  size_t n = 0;
  for (auto const& l : labels) n = std::max(n, l.size());
  return n;
}

/// GEMM1's tile of a short config: "m16n64k128g8w4s4|..." -> "m16n64k128".
std::string tile_of(std::string const& config) {
  std::string g1 = config.substr(0, config.find('|'));
  return g1.substr(0, g1.find('g'));
}

}  // namespace

std::string html_escape(std::string const& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

/// Plot area of a chart: width, height and the left, right, top, bottom margins.
struct Frame {
  double w, h, l, r, t, b;
};

/// The shared frame of the per-M charts: M ticks on the (log2) x axis, both axis lines, the x
/// title and the rotated y title.
template <class XFn>
std::string m_axes(std::set<int64_t> const& ms, XFn X, Frame const& f, std::string const& y_title) {
  std::string s;
  for (int64_t m : ms) {
    s += line(X(m), f.h - f.b, X(m), f.h - f.b + 4, "#444") +
         text(X(m), f.h - f.b + 16, std::to_string(m), "text-anchor=\"middle\"");
  }
  s += line(f.l, f.h - f.b, f.w - f.r, f.h - f.b, "#444") + line(f.l, f.t, f.l, f.h - f.b, "#444");
  s += text((f.l + f.w - f.r) / 2, f.h - 12, "tokens M (log scale)", "text-anchor=\"middle\"");
  s += text(
      14, (f.t + f.h - f.b) / 2, y_title,
      ("text-anchor=\"middle\" transform=\"rotate(-90 14 " + fmt((f.t + f.h - f.b) / 2) + ")\"")
          .c_str());
  return s;
}

}  // namespace

std::string roofline_svg(std::vector<ReportPoint> const& points) {
  double const r = std::max(340.0, label_px(longest(series_order(points))) + 34);
  double const w = 620 + r, l = 60, t = 20, b = 50;
  double const h = std::max(420.0, t + 18.0 * series_order(points).size() + 10);  // legend fits
  std::set<int64_t> ms;
  double ymax = 1.2;
  for (auto const& p : points) {
    ms.insert(std::max<int64_t>(p.m, 1));
    if (p.floor_us > 0) ymax = std::max(ymax, std::max(p.ratio, p.p90_us / p.floor_us));
  }
  double ymin = 1.0;
  for (auto const& p : points) {
    if (p.floor_us > 0) ymin = std::min({ymin, p.ratio, p.p10_us / p.floor_us});
  }
  // Ticks on a 0.25 grid, the floor (1.0) always inside.
  ymin = std::floor(std::max(0.0, ymin * 0.95) * 4) / 4;
  ymax = std::ceil(ymax * 1.02 * 4) / 4;
  double const x0 = std::log2(static_cast<double>(*ms.begin()));
  double const x1 = std::max(x0 + 1, std::log2(static_cast<double>(*ms.rbegin())));
  auto X = [&](int64_t m) {
    return l +
           (std::log2(static_cast<double>(std::max<int64_t>(m, 1))) - x0) / (x1 - x0) * (w - l - r);
  };
  auto Y = [&](double v) { return h - b - (v - ymin) / (ymax - ymin) * (h - t - b); };
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt(w, "%.0f") +
                  "\" height=\"" + fmt(h, "%.0f") + "\" font-size=\"11\">";
  double const step = (ymax - ymin) > 2 ? 0.5 : 0.25;
  for (double v = ymin; v <= ymax + 1e-9; v += step) {
    s += line(l, Y(v), w - r, Y(v), "#eee") +
         text(l - 6, Y(v) + 4, fmt(v, "%.2f"), "text-anchor=\"end\"");
  }
  s += line(l, Y(1), w - r, Y(1), "#d62728", "stroke-dasharray=\"6,3\"") +
       text(w - r - 4, Y(1) - 4, "floor", "text-anchor=\"end\" fill=\"#d62728\"");
  s += m_axes(ms, X, {w, h, l, r, t, b}, "t / floor");
  auto const order = series_order(points);
  for (size_t i = 0; i < order.size(); ++i) {
    std::string const c = colour(i);
    std::string path;
    for (auto const& p : points) {
      if (p.series != order[i] || p.floor_us <= 0) continue;
      path += (path.empty() ? "M" : " L") + fmt(X(p.m)) + "," + fmt(Y(p.ratio));
      s += line(X(p.m), Y(p.p10_us / p.floor_us), X(p.m), Y(p.p90_us / p.floor_us), c);
      s += "<circle cx=\"" + fmt(X(p.m)) + "\" cy=\"" + fmt(Y(p.ratio)) + "\" r=\"3\" fill=\"" + c +
           "\"><title>" + html_escape(order[i]) + " M=" + std::to_string(p.m) + ": " +
           fmt(p.time_us, "%.2f") + " us, floor " + fmt(p.floor_us, "%.2f") + " us, t/floor " +
           fmt(p.ratio, "%.3f") + " (" + html_escape(p.bound) + "), " + html_escape(p.config) +
           "</title></circle>";
    }
    s += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + c + "\" stroke-width=\"1.5\"/>";
    s += "<rect x=\"" + fmt(w - r + 16) + "\" y=\"" + fmt(t + i * 18) +
         "\" width=\"12\" height=\"12\" fill=\"" + c + "\"/>" +
         text(w - r + 34, t + i * 18 + 10, order[i]);
  }
  return s + "</svg>";
}

std::string time_svg(std::vector<ReportPoint> const& points) {
  double const r = std::max(340.0, label_px(longest(series_order(points))) + 34);
  double const w = 620 + r, l = 70, t = 20, b = 50;
  double const h = std::max(420.0, t + 18.0 * series_order(points).size() + 10);  // legend fits
  std::set<int64_t> ms;
  double lo = 0, hi = 0;
  for (auto const& p : points) {
    if (p.time_us <= 0) continue;
    ms.insert(std::max<int64_t>(p.m, 1));
    double const a = p.p10_us > 0 ? std::min(p.p10_us, p.time_us) : p.time_us;
    double const z = std::max(p.p90_us, p.time_us);
    lo = lo == 0 ? a : std::min(lo, a);
    hi = std::max(hi, z);
  }
  if (ms.empty()) return "";
  // Decades that hold every time (log10 scale).
  double const y0 = std::floor(std::log10(lo)), y1 = std::max(y0 + 1, std::ceil(std::log10(hi)));
  double const x0 = std::log2(static_cast<double>(*ms.begin()));
  double const x1 = std::max(x0 + 1, std::log2(static_cast<double>(*ms.rbegin())));
  auto X = [&](int64_t m) {
    return l +
           (std::log2(static_cast<double>(std::max<int64_t>(m, 1))) - x0) / (x1 - x0) * (w - l - r);
  };
  auto Y = [&](double us) { return h - b - (std::log10(us) - y0) / (y1 - y0) * (h - t - b); };
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt(w, "%.0f") +
                  "\" height=\"" + fmt(h, "%.0f") + "\" font-size=\"11\">";
  for (double d = y0; d <= y1 + 1e-9; d += 1) {
    double const us = std::pow(10.0, d);
    s += line(l, Y(us), w - r, Y(us), "#eee") +
         text(l - 6, Y(us) + 4, us >= 1 ? fmt(us, "%.0f") : fmt(us, "%g"), "text-anchor=\"end\"");
  }
  s += m_axes(ms, X, {w, h, l, r, t, b}, "median time, us (log scale)");
  auto const order = series_order(points);
  for (size_t i = 0; i < order.size(); ++i) {
    std::string const c = colour(i);
    std::string path;
    for (auto const& p : points) {
      if (p.series != order[i] || p.time_us <= 0) continue;
      path += (path.empty() ? "M" : " L") + fmt(X(p.m)) + "," + fmt(Y(p.time_us));
      if (p.p10_us > 0 && p.p90_us > 0) {
        s += line(X(p.m), Y(p.p10_us), X(p.m), Y(p.p90_us), c);
      }
      s += "<circle cx=\"" + fmt(X(p.m)) + "\" cy=\"" + fmt(Y(p.time_us)) + "\" r=\"3\" fill=\"" +
           c + "\"><title>" + html_escape(order[i]) + " M=" + std::to_string(p.m) + ": " +
           fmt(p.time_us, "%.2f") + " us, " + html_escape(p.config) + "</title></circle>";
    }
    s += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + c + "\" stroke-width=\"1.5\"/>";
    s += "<rect x=\"" + fmt(w - r + 16) + "\" y=\"" + fmt(t + i * 18) +
         "\" width=\"12\" height=\"12\" fill=\"" + c + "\"/>" +
         text(w - r + 34, t + i * 18 + 10, order[i]);
  }
  return s + "</svg>";
}

std::string config_heatmap_svg(std::vector<ReportPoint> const& points) {
  auto const rows = series_order(points);
  double const label_w = std::max(300.0, label_px(longest(rows)));
  std::set<int64_t> ms;
  std::vector<std::string> configs;  // GEMM1 tiles, the legend's entries
  for (auto const& p : points) {
    ms.insert(p.m);
    if (std::find(configs.begin(), configs.end(), tile_of(p.config)) == configs.end()) {
      configs.push_back(tile_of(p.config));
    }
  }
  std::vector<int64_t> const cols(ms.begin(), ms.end());
  double const cw = 92, ch = 40, top = 24;
  double const grid_h = top + rows.size() * ch;
  size_t const legend_cols = 6;
  double const legend_row = 16;
  double const legend_h =
      20 + std::ceil(static_cast<double>(configs.size()) / legend_cols) * legend_row;
  double const w = std::max(label_w + cols.size() * cw + 10, 900.0);
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt(w, "%.0f") +
                  "\" height=\"" + fmt(grid_h + legend_h, "%.0f") + "\" font-size=\"11\">";
  for (size_t j = 0; j < cols.size(); ++j) {
    s += text(label_w + j * cw + cw / 2, top - 8, "M=" + std::to_string(cols[j]),
              "text-anchor=\"middle\"");
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    s += text(label_w - 8, top + i * ch + ch / 2 + 4, rows[i], "text-anchor=\"end\"");
  }
  for (auto const& p : points) {
    size_t const i = std::find(rows.begin(), rows.end(), p.series) - rows.begin();
    size_t const j = std::find(cols.begin(), cols.end(), p.m) - cols.begin();
    size_t const k = std::find(configs.begin(), configs.end(), tile_of(p.config)) - configs.begin();
    double const x = label_w + j * cw, y = top + i * ch;
    s += "<g><title>" + html_escape(p.series) + " M=" + std::to_string(p.m) + ": " +
         html_escape(p.config) + ", " + fmt(p.time_us, "%.2f") + " us, t/floor " +
         fmt(p.ratio, "%.3f") + "</title><rect x=\"" + fmt(x + 1) + "\" y=\"" + fmt(y + 1) +
         "\" width=\"" + fmt(cw - 2) + "\" height=\"" + fmt(ch - 2) + "\" fill=\"" + colour(k) +
         "\" fill-opacity=\"0.75\"/>" +
         text(x + cw / 2, y + 16, tile_of(p.config), "text-anchor=\"middle\"") +
         text(x + cw / 2, y + 31, p.ratio > 0 ? fmt(p.ratio, "%.2f") : "",
              "text-anchor=\"middle\" font-weight=\"bold\"") +
         "</g>";
  }
  for (size_t k = 0; k < configs.size(); ++k) {
    double const x = 10 + static_cast<double>(k % legend_cols) * (w / legend_cols);
    double const y = grid_h + 16 + static_cast<double>(k / legend_cols) * legend_row;
    s += "<rect x=\"" + fmt(x) + "\" y=\"" + fmt(y - 10) + "\" width=\"12\" height=\"12\" fill=\"" +
         colour(k) + "\" fill-opacity=\"0.75\"/>" + text(x + 18, y, configs[k]);
  }
  return s + "</svg>";
}

std::string deltas_svg(std::vector<ReportDelta> const& deltas) {
  std::vector<std::string> labels;
  for (auto const& d : deltas) {
    labels.push_back(d.series + " M=" + std::to_string(d.m) + ": " + d.arm_b + " vs " + d.arm_a);
  }
  double const label_w = std::max(300.0, label_px(longest(labels)));
  double const plot_w = 420, row_h = 22, top = 28;
  double const w = label_w + plot_w + 360, h = top + deltas.size() * row_h + 30;
  double range = 0.02;
  for (auto const& d : deltas) {
    range = std::max({range, std::fabs(d.ci_low), std::fabs(d.ci_high), d.margin});
  }
  range *= 1.15;
  auto X = [&](double v) { return label_w + (v + range) / (2 * range) * plot_w; };
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt(w, "%.0f") +
                  "\" height=\"" + fmt(h, "%.0f") + "\" font-size=\"11\">";
  double const margin = deltas.empty() ? 0 : deltas.front().margin;
  s += "<rect x=\"" + fmt(X(-margin)) + "\" y=\"" + fmt(top - 6) + "\" width=\"" +
       fmt(X(margin) - X(-margin)) + "\" height=\"" + fmt(deltas.size() * row_h + 6) +
       "\" fill=\"#ddd\"/>";
  s += line(X(0), top - 10, X(0), top + deltas.size() * row_h, "#444");
  for (double v : {-range / 1.15, range / 1.15}) {
    s += text(X(v), top + deltas.size() * row_h + 16, fmt(v * 100, "%+.1f%%"),
              "text-anchor=\"middle\"");
  }
  s += text(X(0), top - 14, "0", "text-anchor=\"middle\"");
  for (size_t i = 0; i < deltas.size(); ++i) {
    auto const& d = deltas[i];
    double const y = top + i * row_h + row_h / 2;
    std::string const c = d.verdict == "b_faster"   ? "#2ca02c"
                          : d.verdict == "b_slower" ? "#d62728"
                                                    : "#7f7f7f";
    s += text(label_w - 8, y + 4, labels[i], "text-anchor=\"end\"");
    s += line(X(d.ci_low), y, X(d.ci_high), y, c, "stroke-width=\"2\"");
    s +=
        "<circle cx=\"" + fmt(X(d.delta)) + "\" cy=\"" + fmt(y) + "\" r=\"4\" fill=\"" + c + "\"/>";
    std::string const verdict = d.verdict == "b_faster"   ? d.arm_b + " faster"
                                : d.verdict == "b_slower" ? d.arm_b + " slower"
                                                          : "no difference";
    s += text(label_w + plot_w + 12, y + 4,
              verdict + "  " + fmt(d.delta * 100, "%+.1f%%") + " [" + fmt(d.ci_low * 100, "%+.1f") +
                  ", " + fmt(d.ci_high * 100, "%+.1f") + "]" +
                  (d.digests_equal    ? ""
                   : d.expected_equal ? "  \u2260 digest (not comparable)"
                                      : "  \u2260 digest"),
              ("fill=\"" + c + "\"").c_str());
  }
  return s + "</svg>";
}

}  // namespace moetune::bench
