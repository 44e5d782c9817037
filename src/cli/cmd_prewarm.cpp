// moetune prewarm --tables DIR | --problem P --m LIST: make every config the tables name (or the
// default rule's config of a problem at each M) ready before serving (cuda: NVRTC into the cubin
// cache, no GPU needed; cpu: validated), so serving never compiles.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/bench_args.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "runtime/bundle.hpp"

namespace moetune::cli {

void print_prewarm(runtime::PrewarmReport const& r, bool quiet) {
  int compiled = 0, cached = 0, validated = 0;
  for (auto const& it : r.items) {
    compiled += it.outcome == "compiled";
    cached += it.outcome == "cached";
    validated += it.outcome == "validated";
    if (!quiet) {
      std::cout << it.table << " M=" << it.bucket << " " << it.config << ": " << it.outcome;
      for (auto const& cubin : it.cubins) std::cout << " " << cubin;
      std::cout << "\n";
    }
  }
  std::cout << r.tables << " tables, " << r.items.size() << " configs: " << compiled
            << " compiled, " << cached << " already cached, " << validated << " validated\n";
}

runtime::PrewarmProgress prewarm_progress(bool quiet) {
  if (quiet) return {};
  // stderr, one line per config compiled (the slow step: seconds each on cuda), so a long
  // prewarm shows it is moving; stdout keeps its per-config lines and summary, printed at the end.
  return [](runtime::PrewarmItem const& it, size_t index, size_t total) {
    if (it.outcome != "compiled") return;
    std::fprintf(stderr, "prewarm: [%zu/%zu] compiled %s M=%lld %s in %.1f s\n", index, total,
                 it.table.c_str(), static_cast<long long>(it.bucket), it.config.c_str(),
                 it.compile_ms / 1000.0);
    std::fflush(stderr);
  };
}

void setup_prewarm(CLI::App& app, int& exit_code) {
  auto tables = std::make_shared<std::string>();
  auto problem = std::make_shared<std::string>();
  auto ms = std::make_shared<std::string>();
  auto quiet = std::make_shared<bool>(false);
  auto* t = app.add_option("--tables", *tables, "tables directory");
  auto* p = app.add_option("--problem", *problem,
                           "a problem whose default-rule configs to prewarm (with --m)");
  app.add_option("--m", *ms, "token counts for --problem, e.g. 1,16,256")->needs(p);
  t->excludes(p);
  app.callback([tables, problem, ms, quiet, &exit_code] {
    if (tables->empty() == problem->empty()) {
      throw CliExit{kExitBadInput, "give --tables DIR, or --problem P with --m LIST"};
    }
    if (!tables->empty()) {
      print_prewarm(unwrap(runtime::prewarm_tables(*tables, prewarm_progress(*quiet))), *quiet);
    } else {
      if (ms->empty()) throw CliExit{kExitBadInput, "--problem needs --m LIST, e.g. --m 1,16,256"};
      auto parsed = parse_problem_or_exit(*problem);
      print_prewarm(
          unwrap(runtime::prewarm_defaults(parsed, parse_m_list(*ms), prewarm_progress(*quiet))),
          *quiet);
    }
    exit_code = kExitOk;
  });
  app.add_flag("--quiet", *quiet,
               "print only the summary line (and no progress line on stderr per compiled config)");
}

}  // namespace moetune::cli
