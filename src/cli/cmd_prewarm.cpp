// moetune prewarm --tables DIR: make every config the tables name ready before serving (cuda:
// NVRTC into the cubin cache, no GPU needed; cpu: validated), so serving never compiles.
#include <iostream>
#include <memory>

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

void setup_prewarm(CLI::App& app, int& exit_code) {
  auto tables = std::make_shared<std::string>();
  auto quiet = std::make_shared<bool>(false);
  app.add_option("--tables", *tables, "tables directory")->required();
  app.add_flag("--quiet", *quiet, "print only the summary line");
  app.callback([tables, quiet, &exit_code] {
    print_prewarm(unwrap(runtime::prewarm_tables(*tables)), *quiet);
    exit_code = kExitOk;
  });
}

}  // namespace moetune::cli
