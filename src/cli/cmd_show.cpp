// moetune show: print a table (key, rule, rows with configs and sources), as text or JSON.
#include <iostream>
#include <memory>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "cli/json_out.hpp"

namespace moetune::cli {
namespace {

struct ShowArgs {
  std::string table_path;
  bool json = false;
};

void run_show(ShowArgs const& args) {
  core::Table table = load_table_or_exit(args.table_path);
  if (args.json) {
    std::cout << table_json_text(table, args.table_path);
    return;
  }
  std::cout << format_table_text(table, args.table_path);
}

}  // namespace

void setup_show(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ShowArgs>();
  app.add_option("--table", args->table_path, "the vLLM table file (its .moetune manifest is read)")
      ->required();
  app.add_flag("--json", args->json, "print the table (key, policy, rows) as one JSON object");
  app.callback([args, &exit_code] {
    run_show(*args);
    exit_code = kExitOk;
  });
}

}  // namespace moetune::cli
