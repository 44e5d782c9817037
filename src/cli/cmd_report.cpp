// moetune report: one self-contained HTML page (bench/report.hpp) from a bench or A/B folder, or
// from a bench CSV (moetune bench's or the kernel benchmark's). Writes DIR/report.html (or --out).
#include <filesystem>
#include <iostream>

#include "bench/report.hpp"
#include "cli/commands.hpp"
#include "core/atomic_file.hpp"

namespace moetune::cli {
namespace {

struct ReportArgs {
  std::string path;
  std::string out;
};

int run_report(ReportArgs const& args) {
  bench::ReportData const data = unwrap(bench::load_report_data(args.path));
  std::string out = args.out;
  if (out.empty()) {
    namespace fs = std::filesystem;
    out = fs::is_directory(args.path) ? (fs::path(args.path) / "report.html").string()
                                      : fs::path(args.path).replace_extension(".html").string();
  }
  unwrap(core::write_file_atomic(out, bench::render_report_html(data)));
  std::cout << "wrote " << out << " (" << data.points.size() << " points, " << data.deltas.size()
            << " A/B comparisons)\n";
  return kExitOk;
}

}  // namespace

void setup_report(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ReportArgs>();
  app.add_option("path", args->path,
                 "a folder written by bench or ab, or a bench CSV (bench.csv or the kernel "
                 "benchmark's bench/results/*.csv)")
      ->required();
  app.add_option("--out", args->out,
                 "the HTML file to write (default: DIR/report.html, or the CSV's name with .html)");
  app.callback([args, &exit_code] { exit_code = run_report(*args); });
}

}  // namespace moetune::cli
