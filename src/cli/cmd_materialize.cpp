// moetune materialize: write a recipe's pinned rows into its tables, without a GPU or a sweep.
#include <iostream>
#include <memory>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"

namespace moetune::cli {
namespace {

struct MaterializeArgs {
  std::string recipe_path;
  std::string out_dir;
  bool merge = false;
};

void run_materialize(MaterializeArgs const& args) {
  core::Recipe recipe = load_recipe_or_exit(args.recipe_path);
  std::vector<std::string> written = unwrap(core::materialize(recipe, args.out_dir, args.merge));
  for (std::string const& path : written) {
    std::cout << "wrote " << path << (args.merge ? " (merged)" : "") << "\n";
  }
}

}  // namespace

void setup_materialize(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<MaterializeArgs>();
  app.add_option("--recipe", args->recipe_path, "the recipe (JSON)")->required();
  app.add_option("--out", args->out_dir, "directory the tables go to (created if missing)")
      ->required();
  app.add_flag("--merge", args->merge,
               "keep rows of existing tables that the recipe does not pin (default: the table "
               "holds exactly the pinned rows)");
  app.callback([args, &exit_code] {
    run_materialize(*args);
    exit_code = kExitOk;
  });
}

}  // namespace moetune::cli
