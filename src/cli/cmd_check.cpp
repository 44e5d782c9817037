// moetune check: regenerate a recipe's tables and compare content (not bytes) with what ships.
// Exit 0 when they agree; else one line per difference (file, bucket, what) and exit 1.
#include <iostream>
#include <memory>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"

namespace moetune::cli {
namespace {

struct CheckArgs {
  std::string recipe_path;
  std::string tables_dir;
};

int run_check(CheckArgs const& args) {
  core::Recipe recipe = load_recipe_or_exit(args.recipe_path);
  std::vector<core::TableDiff> diffs = unwrap(core::check_recipe(recipe, args.tables_dir));
  if (diffs.empty()) {
    std::cout << "check: " << args.tables_dir << " matches " << args.recipe_path << " ("
              << recipe.shapes.size() << (recipe.shapes.size() == 1 ? " table" : " tables")
              << ")\n";
    return kExitOk;
  }
  for (core::TableDiff const& d : diffs) {
    std::cout << args.tables_dir << "/" << d.file;
    if (d.bucket >= 0) std::cout << ": bucket " << d.bucket;
    std::cout << ": " << d.what << "\n";
  }
  std::cerr << "moetune check: " << diffs.size()
            << (diffs.size() == 1 ? " difference" : " differences") << " between "
            << args.tables_dir << " and " << args.recipe_path
            << "; regenerate with 'moetune materialize --recipe " << args.recipe_path << " --out "
            << args.tables_dir << " --merge'\n";
  return kExitFindings;
}

}  // namespace

void setup_check(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CheckArgs>();
  app.add_option("--recipe", args->recipe_path, "the recipe (JSON)")->required();
  app.add_option("--tables", args->tables_dir, "directory holding the shipped tables")->required();
  app.callback([args, &exit_code] { exit_code = run_check(*args); });
}

}  // namespace moetune::cli
