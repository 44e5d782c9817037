// Tables rebuilt from a tune store alone: each recipe shape's table holds, per bucket, the winner
// of the latest decision the store recorded for that table file, with a source rebuilt from the
// decision and the winner's final-round measurement (times, verdict, digest, the tune's command);
// the recipe's pinned rows over them. No kernel runs, so no GPU is needed: a store copied off the
// device rebuilds the tables its tunes wrote. `moetune materialize --from-store` calls it.
#pragma once

#include <string>
#include <vector>

#include "core/recipe.hpp"
#include "core/result.hpp"
#include "core/table.hpp"
#include "tuner/store.hpp"

namespace moetune::tuner {

/// The tables of every shape of `recipe`, built from `store` (nothing written). Fails before
/// anything is built into a file: kNotFound naming the shape's table file, the bucket and the
/// command that tunes it, when the store holds no decision for a bucket the recipe does not pin;
/// the store's own errors otherwise.
core::Result<std::vector<core::Table>> tables_from_store(Store& store, core::Recipe const& recipe,
                                                         std::string const& recipe_path);

}  // namespace moetune::tuner
