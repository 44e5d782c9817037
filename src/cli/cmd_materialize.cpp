// moetune materialize: write a recipe's pinned rows into its tables, without a GPU or a sweep;
// with --from-store, every other bucket's row rebuilt from a tune store (tuner/tables_from_store).
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/file_transaction.hpp"
#include "core/table.hpp"
#include "tuner/store.hpp"
#include "tuner/tables_from_store.hpp"

namespace moetune::cli {
namespace {

struct MaterializeArgs {
  std::string recipe_path;
  std::string out_dir;
  bool merge = false;
  std::string store;  ///< --from-store
};

/// The tables rebuilt from the store, written as one transaction (temp files, then renames).
void write_from_store(MaterializeArgs const& args, core::Recipe const& recipe) {
  if (args.merge) {
    throw CliExit{kExitBadInput,
                  "--merge with --from-store: a rebuilt table holds the store's rows and the "
                  "recipe's pins only; drop --merge"};
  }
  if (!std::filesystem::is_regular_file(args.store)) {
    throw CliExit{kExitBadInput, "--from-store " + args.store +
                                     ": no such file; pass the --store a tune run wrote"};
  }
  auto store = unwrap(tuner::Store::open(args.store));
  auto const tables = unwrap(tuner::tables_from_store(*store, recipe, args.recipe_path));
  unwrap(core::ensure_writable_dir(args.out_dir));
  // All-or-nothing, as materialize without a store: every table staged before any is renamed.
  core::FileTransaction tx;
  std::vector<std::string> written;
  for (core::Table const& table : tables) {
    written.push_back(unwrap(core::stage_table(table, args.out_dir, tx)));
  }
  unwrap(tx.commit());
  for (std::string const& path : written) {
    std::cout << "wrote " << path << " (from store " << args.store << ")\n";
  }
}

void run_materialize(MaterializeArgs const& args) {
  core::Recipe recipe = load_recipe_or_exit(args.recipe_path);
  if (!args.store.empty()) return write_from_store(args, recipe);
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
  app.add_option("--from-store", args->store,
                 "rebuild the tables from this tune store (a --store of moetune tune): each "
                 "bucket the recipe does not pin gets the winner of the store's latest decision "
                 "for it, with its measurement as the row's source; no kernel runs");
  app.callback([args, &exit_code] {
    run_materialize(*args);
    exit_code = kExitOk;
  });
}

}  // namespace moetune::cli
