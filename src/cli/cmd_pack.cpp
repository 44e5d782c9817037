// moetune pack --tables DIR --out BUNDLE: a deployable bundle (tables, cubins, bundle.json) that
// serves with MOETUNE_CACHE_DIR=BUNDLE and no compiler run (runtime/bundle.hpp).
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "runtime/bundle.hpp"

namespace moetune::cli {

void print_prewarm(runtime::PrewarmReport const& r, bool quiet);  // cmd_prewarm.cpp
runtime::PrewarmProgress prewarm_progress(bool quiet);            // cmd_prewarm.cpp

void setup_pack(CLI::App& app, int& exit_code) {
  auto tables = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  app.add_option("--tables", *tables, "tables directory")->required();
  app.add_option("--out", *out, "bundle directory to write (created)")->required();
  app.callback([tables, out, &exit_code] {
    print_prewarm(unwrap(runtime::pack_bundle(*tables, *out, prewarm_progress(false))), true);
    std::cout << "bundle: " << *out << " (serve with MOETUNE_CACHE_DIR=" << *out << " and tables "
              << *out << "/tables)\n";
    exit_code = kExitOk;
  });
}

}  // namespace moetune::cli
