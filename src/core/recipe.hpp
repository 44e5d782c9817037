// Recipe: the checked-in source a table is generated from. Per shape: the problem (E, K, I, top_k,
// activation, dtype), the device, the buckets to tune, the search family and the pinned rows, each
// with the measurement behind it. `materialize` writes pinned rows without a GPU; `check`
// regenerates and compares content with what ships.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "core/routing.hpp"
#include "core/source.hpp"
#include "core/table.hpp"

namespace moetune::core {

inline constexpr int kRecipeVersion = 1;

/// A row fixed by hand from a measurement; `source` is required.
struct PinnedRow {
  MoeConfig config;
  Source source;

  bool operator==(PinnedRow const&) const = default;
};

/// One shape of a recipe.
struct RecipeShape {
  std::string name;     ///< e.g. "qwen3-30b-a3b"
  MoeProblem problem;   ///< num_tokens unused
  std::string device;   ///< device name the table is for ("NVIDIA H200", "cpu")
  std::string backend;  ///< "cuda" | "cpu"
  std::string family;   ///< search family ("sm90_gather", "cpu_tiled")
  int family_version = 0;
  std::vector<int64_t> buckets;              ///< M values to tune, ascending, distinct
  RoutingProfile routing;                    ///< workload the tuner measures on
  ResolverPolicy policy;                     ///< written into the table's manifest
  std::map<int64_t, PinnedRow> pinned_rows;  ///< bucket -> pinned row

  bool operator==(RecipeShape const&) const = default;
};

struct Recipe {
  std::string path;  ///< file it was loaded from (for messages)
  std::string name;
  std::vector<RecipeShape> shapes;

  bool operator==(Recipe const&) const = default;
};

/// Loads and validates a recipe. Errors name the file and the field path, e.g.
/// "recipes/demo.json: shapes[0] (demo) pinned_rows[16]: missing 'source'; a pinned row must
/// carry the measurement behind it (kind, date, device, protocol, numbers, digest)".
Result<Recipe> load_recipe(std::string const& path);
/// As load_recipe, from the file's text (`path` names it in errors and becomes Recipe::path).
Result<Recipe> parse_recipe(std::string_view text, std::string const& path);
/// Serialises a recipe (load(save(r)) == r up to `path`).
std::string recipe_to_json(Recipe const& r);

/// The TableKey of a shape's table (toolchain from the caller).
TableKey table_key_for(RecipeShape const& shape, std::string const& toolchain = "");

/// Writes every shape's pinned rows into its table under `out_dir`. With merge, rows already in
/// the existing table that the recipe does not pin are kept; without, the table holds exactly the
/// pinned rows. Returns the written paths. All-or-nothing over every file it writes: on any error
/// (a corrupt table under merge, an unwritable path) no file has changed.
Result<std::vector<std::string>> materialize(Recipe const& recipe, std::string const& out_dir,
                                             bool merge);

/// One difference found by check: a table file and a bucket ("" / -1 for whole-file findings).
struct TableDiff {
  std::string file;
  int64_t bucket = -1;
  std::string what;  ///< "missing row", "extra row", "config differs: a vs b", "missing file"
};
/// Regenerates (materialize with merge semantics against a copy of tables_dir) into a temp dir
/// and compares content, not bytes, with what ships in tables_dir.
Result<std::vector<TableDiff>> check_recipe(Recipe const& recipe, std::string const& tables_dir);

}  // namespace moetune::core
