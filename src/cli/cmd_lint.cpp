// moetune lint: findings about tables that load but serve badly or cannot be trusted (seed 000: a
// stale tiny-M row with no measurement shadowing the default). Exit 1 when there is any finding.
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "cli/json_out.hpp"
#include "core/lint.hpp"
#include "core/table_lookup.hpp"
#include "kernels/testbed.hpp"

namespace moetune::cli {
namespace {

struct LintArgs {
  std::string tables_dir;
  std::string recipe_path;
  int64_t max_m = 0;
  bool json = false;
};

/// What identifies a table's shape in the problem lint_tables hands the default-config callback:
/// the fields of the vLLM file name (K is unknown for a plain vLLM file, and one directory cannot
/// hold two tables that differ only in K, since their file names would be equal).
using ShapeId = std::tuple<int64_t, int64_t, core::DType>;
ShapeId shape_id(core::MoeProblem const& p) {
  return {p.num_experts, p.intermediate_size, p.dtype};
}

/// The backends the tables in a directory need, by shape and by family. A family whose backend
/// is unavailable here (cuda on a machine without a GPU) maps to nullptr; its tiny-M findings are
/// dropped with a note instead of being judged against a default this machine cannot compute.
struct Backends {
  std::map<ShapeId, std::string> family_of;
  std::map<std::string, std::shared_ptr<core::Backend>> by_family;
  std::set<std::string> files_without_default;
};

Backends find_backends(LintArgs const& args, std::optional<core::Recipe> const& recipe) {
  Backends b;
  auto files = core::list_table_files(args.tables_dir);
  if (files.ok()) {
    for (std::string const& file : *files) {
      // Only the key is needed here: a lookup reads it without parsing the rows.
      auto table = core::TableLookup::open(file);
      if (!table.ok() || table->head().key.family.empty()) continue;
      core::TableKey const& key = table->head().key;
      b.family_of[shape_id(core::problem_for_key(key, 1))] = key.family;
    }
  }
  if (recipe) {
    for (auto const& shape : recipe->shapes) {
      b.family_of[shape_id(core::problem_for_key(core::table_key_for(shape), 1))] = shape.family;
    }
  }
  for (auto const& [id, family] : b.family_of) {
    if (b.by_family.count(family) != 0) continue;
    auto backend = kernels::make_backend(backend_for_family(family));
    b.by_family[family] =
        backend.ok() ? std::shared_ptr<core::Backend>(std::move(*backend)) : nullptr;
    if (!backend.ok()) {
      std::cerr << "moetune lint: note: family " << family << " needs the "
                << backend_for_family(family) << " backend for its default config, which is "
                << "unavailable here (" << backend.error().message
                << "); tiny-M rows of its tables are not checked\n";
    }
  }
  return b;
}

/// The findings to show: a tiny-M shadow finding of a file whose shape has no default on this
/// machine is dropped (no default to judge against), with one note per plain vLLM file instead.
std::vector<core::LintFinding> shown_findings(std::vector<core::LintFinding> const& findings,
                                              Backends const& backends,
                                              std::set<ShapeId> const& unavailable) {
  std::vector<core::LintFinding> shown;
  std::set<std::string> noted;
  std::map<std::string, std::optional<core::TableKey>> keys;  // one load per file, not per finding
  for (core::LintFinding const& f : findings) {
    if (f.kind == core::LintKind::kTinyMShadow && f.bucket) {
      if (keys.count(f.file) == 0) {
        auto table = core::TableLookup::open(f.file);
        keys[f.file] = table.ok() ? std::optional(table->head().key) : std::nullopt;
      }
      std::optional<core::TableKey> const& key = keys[f.file];
      ShapeId const id = shape_id(core::problem_for_key(key.value_or(core::TableKey{}), 1));
      if (key && unavailable.count(id) != 0) {
        // No default to judge against on this machine: say so once per file instead of guessing.
        if (backends.family_of.count(id) == 0 && noted.insert(f.file).second) {
          std::cerr << "moetune lint: note: " << f.file << ": no kernel family known (a plain "
                    << "vLLM file); pass --recipe to check its tiny-M rows against the default\n";
        }
        continue;
      }
    }
    shown.push_back(f);
  }
  return shown;
}

/// The findings as a JSON array (--json) or one line each.
void print_findings(std::vector<core::LintFinding> const& shown, bool json) {
  if (!json) {
    for (core::LintFinding const& f : shown) std::cout << f.to_string() << "\n";
    return;
  }
  std::cout << "[";
  for (size_t i = 0; i < shown.size(); ++i) {
    core::LintFinding const& f = shown[i];
    std::cout << (i ? ",\n " : "\n ") << "{\"kind\": " << json_quote(core::to_string(f.kind))
              << ", \"file\": " << json_quote(f.file)
              << ", \"bucket\": " << (f.bucket ? std::to_string(*f.bucket) : "null")
              << ", \"message\": " << json_quote(f.message) << "}";
  }
  std::cout << (shown.empty() ? "]\n" : "\n]\n");
}

int run_lint(LintArgs const& args) {
  if (args.max_m < 0) check_m(args.max_m, "--max-m");
  std::optional<core::Recipe> recipe;
  if (!args.recipe_path.empty()) recipe = load_recipe_or_exit(args.recipe_path);
  std::error_code ec;
  if (!std::filesystem::is_directory(args.tables_dir, ec)) {
    throw CliExit{kExitBadInput, args.tables_dir +
                                     ": not a directory; pass the folder that holds "
                                     "the tables (e.g. --tables tables/cpu)"};
  }
  Backends backends = find_backends(args, recipe);
  std::set<ShapeId> unavailable;
  auto default_config = [&](core::MoeProblem const& problem) -> core::MoeConfig {
    auto family = backends.family_of.find(shape_id(problem));
    std::string const name = family != backends.family_of.end() ? family->second : "";
    auto backend = backends.by_family.find(name);
    if (backend == backends.by_family.end() || backend->second == nullptr) {
      unavailable.insert(shape_id(problem));
      return core::MoeConfig{};
    }
    return backend->second->default_config(problem);
  };
  auto can_produce = [&](std::string const& family, core::MoeProblem const& problem,
                         core::MoeConfig const& config) -> core::Status {
    auto backend = backends.by_family.find(family);
    if (backend == backends.by_family.end() || backend->second == nullptr)
      return core::Status::Ok();
    return backend->second->can_implement(problem, config);
  };
  core::LintOptions options;
  options.max_m = args.max_m;
  std::vector<core::LintFinding> const shown = shown_findings(
      unwrap(core::lint_tables(args.tables_dir, recipe, default_config, can_produce, options)),
      backends, unavailable);
  print_findings(shown, args.json);
  if (shown.empty()) {
    if (!args.json) std::cout << "lint: " << args.tables_dir << ": no findings\n";
    return kExitOk;
  }
  std::cerr << "moetune lint: " << shown.size() << (shown.size() == 1 ? " finding" : " findings")
            << " in " << args.tables_dir << "\n";
  return kExitFindings;
}

}  // namespace

void setup_lint(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<LintArgs>();
  app.add_option("--tables", args->tables_dir, "directory holding the tables")->required();
  app.add_option("--recipe", args->recipe_path,
                 "the recipe that writes these tables (its families override the manifests')");
  app.add_option("--max-m", args->max_m,
                 "serving range [1, max-m] for the unreachable-key check (default: largest key)");
  app.add_flag("--json", args->json,
               "print the findings as a JSON array of {kind, file, bucket, "
               "message}");
  app.callback([args, &exit_code] { exit_code = run_lint(*args); });
}

}  // namespace moetune::cli
