// moetune report: one self-contained HTML page (bench/report.hpp) from one or more bench or A/B
// folders or bench CSVs (moetune bench's or the kernel benchmark's). One input writes
// DIR/report.html (or the CSV's name with .html) unless --out says otherwise; several inputs are
// drawn on one page, each series prefixed with its input's name, and need --out.
#include <filesystem>
#include <iostream>

#include "bench/report.hpp"
#include "cli/commands.hpp"
#include "core/atomic_file.hpp"

namespace moetune::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> paths;
  std::string out;
};

int run_report(ReportArgs const& args) {
  if (args.paths.size() > 1 && args.out.empty()) {
    throw CliExit{kExitBadInput, std::to_string(args.paths.size()) +
                                     " inputs make one page: say where it goes with --out FILE"};
  }
  bench::ReportData const data = unwrap(bench::load_report_inputs(args.paths));
  std::string out = args.out;
  if (out.empty()) {
    namespace fs = std::filesystem;
    std::string const& path = args.paths.front();
    out = fs::is_directory(path) ? (fs::path(path) / "report.html").string()
                                 : fs::path(path).replace_extension(".html").string();
  }
  unwrap(core::write_file_atomic(out, bench::render_report_html(data)));
  std::cout << "wrote " << out << " (" << data.points.size() << " points, "
            << data.arm_points.size() << " arm points, " << data.deltas.size()
            << " A/B comparisons)\n";
  return kExitOk;
}

}  // namespace

void setup_report(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ReportArgs>();
  app.add_option("paths", args->paths,
                 "one or more folders written by bench or ab, or bench CSVs (bench.csv or the "
                 "kernel benchmark's <date>-<commit>.csv); several are drawn on one page")
      ->required();
  app.add_option("--out", args->out,
                 "the HTML file to write (default with one input: DIR/report.html, or the CSV's "
                 "name with .html; required with several)");
  app.callback([args, &exit_code] { exit_code = run_report(*args); });
}

}  // namespace moetune::cli
