// check_recipe: materialize into a temp copy of the shipped tables, then compare content. The
// temp directory is owned by a guard, so every return (and every error) removes it.
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <memory>

#include "core/engine_rows.hpp"
#include "core/recipe.hpp"

namespace moetune::core {

namespace {

namespace fs = std::filesystem;

/// A fresh directory under the system temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  static Result<std::unique_ptr<TempDir>> make(char const* prefix) {
    std::error_code ec;
    fs::path const root = fs::temp_directory_path(ec);
    if (ec) {
      return make_error(ErrorCode::kIo, "check",
                        "no temp directory: " + ec.message() + "; set TMPDIR to a writable one");
    }
    std::string tmpl = (root / (std::string(prefix) + "XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      return make_error(ErrorCode::kIo, tmpl,
                        "cannot create a temp directory for the check; set TMPDIR to a writable "
                        "one");
    }
    return std::unique_ptr<TempDir>(new TempDir(tmpl));
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string const& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

/// Loads each shape's shipped table into `shipped` (by file name) and copies its files into
/// `tmp`; a missing one is a diff. A broken one is an error naming the shipped file (not the copy).
Status load_and_copy_shipped(Recipe const& recipe, std::string const& tables_dir,
                             std::string const& tmp, std::map<std::string, Table>& shipped,
                             std::vector<TableDiff>& diffs) {
  std::error_code ec;
  for (auto const& shape : recipe.shapes) {
    std::string const name = table_file_name(table_key_for(shape));
    fs::path const path = fs::path(tables_dir) / name;
    auto have = load_table(path.string());
    if (!have.ok() && have.error().code == ErrorCode::kNotFound) {
      diffs.push_back({name, -1, "missing file"});
      continue;
    }
    if (!have.ok()) return have.error();
    shipped.emplace(name, std::move(*have));
    fs::copy_file(path, fs::path(tmp) / name, ec);
    if (fs::exists(manifest_path(path.string()), ec)) {
      fs::copy_file(manifest_path(path.string()), manifest_path((fs::path(tmp) / name).string()),
                    ec);
    }
  }
  return Status::Ok();
}

/// The differences between the regenerated table `want` and the shipped `have` (file `name`).
void diff_tables(Table const& want, Table const& have, std::string const& name,
                 std::vector<TableDiff>& diffs) {
  if (!have.has_manifest) diffs.push_back({name, -1, "missing manifest"});
  TableKey want_key = want.key;
  want_key.toolchain = have.key.toolchain;
  if (have.has_manifest && !(want_key == have.key)) diffs.push_back({name, -1, "key differs"});
  if (have.has_manifest && !(want.policy == have.policy)) {
    diffs.push_back({name, -1, "policy differs"});
  }
  for (auto const& [m, row] : want.rows) {
    auto it = have.rows.find(m);
    if (it == have.rows.end()) {
      diffs.push_back({name, m, "missing row"});
    } else if (!(it->second.config == row.config)) {
      diffs.push_back({name, m,
                       "config differs: " + short_string(it->second.config) + " vs " +
                           short_string(row.config)});
    } else if (have.has_manifest && !(it->second.source == row.source)) {
      diffs.push_back({name, m, "source differs"});
    }
  }
  for (auto const& [m, row] : have.rows) {
    if (want.rows.count(m) == 0) diffs.push_back({name, m, "extra row"});
  }
}

}  // namespace

Result<std::vector<TableDiff>> check_recipe(Recipe const& recipe, std::string const& tables_dir) {
  auto tmp = TempDir::make("moetune-check-");
  if (!tmp.ok()) return tmp.error();
  std::vector<TableDiff> diffs;
  std::map<std::string, Table> shipped;
  MOETUNE_RETURN_IF_ERROR(
      load_and_copy_shipped(recipe, tables_dir, (*tmp)->path(), shipped, diffs));
  auto regenerated = materialize(recipe, (*tmp)->path(), /*merge=*/true);
  if (!regenerated.ok()) return regenerated.error();
  for (auto const& shape : recipe.shapes) {  // recipe order, as the report lists them
    std::string const name = table_file_name(table_key_for(shape));
    auto have = shipped.find(name);
    if (have == shipped.end()) continue;
    auto want = load_table((fs::path((*tmp)->path()) / name).string());
    if (!want.ok()) return want.error();
    diff_tables(*want, have->second, name, diffs);
  }
  return diffs;
}

}  // namespace moetune::core
