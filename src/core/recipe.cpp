// Recipes: strict loading with errors that name file + field path, serialisation, and the two
// GPU-free operations on them: materialize (pinned rows -> tables) and, in recipe_check.cpp, check.
#include "core/recipe.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/atomic_file.hpp"
#include "core/engine_rows.hpp"
#include "core/json_io.hpp"
#include "core/names.hpp"

namespace moetune::core {

namespace {

namespace fs = std::filesystem;

Error at_error(JsonAt const& at, std::string message,
               ErrorCode code = ErrorCode::kInvalidArgument) {
  return json_error(code, at, std::move(message));
}

Status check_source(Source const& s, JsonAt const& at) {
  char const* const names[] = {"kind", "date", "device", "protocol"};
  std::string const* const values[] = {&s.kind, &s.date, &s.device, &s.protocol};
  for (int i = 0; i < 4; ++i) {
    if (values[i]->empty()) {
      return at_error(at, std::string("source.") + names[i] +
                              " is empty; a pinned row must say what was measured, when, on "
                              "which device and how");
    }
  }
  bool const iso = s.date.size() == 10 && s.date[4] == '-' && s.date[7] == '-' &&
                   std::all_of(s.date.begin(), s.date.end(),
                               [](char c) { return c == '-' || (c >= '0' && c <= '9'); });
  if (!iso) return at_error(at, "source.date = '" + s.date + "' is not an ISO date (YYYY-MM-DD)");
  return Status::Ok();
}

Status parse_pinned_rows(Json const& j, JsonAt const& at, std::map<int64_t, PinnedRow>* out) {
  if (!j.is_object())
    return at_error(at, "expected an object keyed by M, got " + describe_json(j),
                    ErrorCode::kParse);
  for (auto it = j.begin(); it != j.end(); ++it) {
    char* end = nullptr;
    int64_t const m = std::strtoll(it.key().c_str(), &end, 10);
    if (it.key().empty() || *end != '\0' || m < 1 || m > kMaxTokens) {
      return at_error(at, "key '" + clip(it.key()) + "' is not a token count in [1, 2^24]");
    }
    JsonAt const row_at{at.file, at.path + "[" + it.key() + "]"};
    auto r = ObjectReader::open(it.value(), row_at, {"config", "source"});
    if (!r.ok()) return r.error();
    if (!r->has("source")) {
      return at_error(row_at,
                      "missing 'source'; a pinned row must carry the measurement behind it "
                      "(kind, date, device, protocol, numbers, digest)");
    }
    PinnedRow row;
    MOETUNE_RETURN_IF_ERROR(r->required("config", &row.config));
    if (Status st = validate(row.config, ""); !st.ok()) {
      return at_error(row_at.field("config"), st.error().where + ": " + st.error().message);
    }
    MOETUNE_RETURN_IF_ERROR(r->required("source", &row.source));
    MOETUNE_RETURN_IF_ERROR(check_source(row.source, row_at));
    (*out)[m] = std::move(row);
  }
  return Status::Ok();
}

/// A recipe states every size of its problem: a missing one would take MoeProblem's default
/// (top_k 1) and make a table for a problem nobody runs.
Status check_problem_fields(Json const& j, JsonAt const& at) {
  if (!j.is_object()) return Status::Ok();  // from_json names the wrong type
  for (char const* f : {"num_experts", "hidden_size", "intermediate_size", "top_k"}) {
    if (j.contains(f)) continue;
    return at_error(at,
                    std::string("missing field '") + f +
                        "'; a recipe's problem states num_experts, hidden_size, "
                        "intermediate_size and top_k (nothing defaults)",
                    ErrorCode::kParse);
  }
  return Status::Ok();
}

Status parse_shape(Json const& j, JsonAt const& at0, RecipeShape* s) {
  JsonAt at = at0;
  if (j.is_object() && j.contains("name") && j["name"].is_string()) {
    at.path += " (" + clip(j["name"].get<std::string>()) + ")";
  }
  auto r = ObjectReader::open(j, at,
                              {"name", "problem", "device", "backend", "family", "family_version",
                               "buckets", "routing", "policy", "pinned_rows"});
  if (!r.ok()) return r.error();
  MOETUNE_RETURN_IF_ERROR(r->required("name", &s->name));
  if (s->name.empty()) return at_error(at.field("name"), "is empty; name the shape");
  MOETUNE_RETURN_IF_ERROR(r->required("problem", &s->problem));
  MOETUNE_RETURN_IF_ERROR(check_problem_fields(j["problem"], at.field("problem")));
  if (Status st = validate(s->problem); !st.ok()) {
    return at_error(at.field("problem"), st.error().message);
  }
  MOETUNE_RETURN_IF_ERROR(r->required("device", &s->device));
  MOETUNE_RETURN_IF_ERROR(r->required("backend", &s->backend));
  if (s->backend != "cuda" && s->backend != "cpu" && s->backend != "triton") {
    return at_error(at.field("backend"), "unknown backend '" + s->backend +
                                             "'; expected cuda, cpu or triton" +
                                             did_you_mean(s->backend, {"cuda", "cpu", "triton"}));
  }
  MOETUNE_RETURN_IF_ERROR(r->required("family", &s->family));
  MOETUNE_RETURN_IF_ERROR(r->optional("family_version", &s->family_version));
  MOETUNE_RETURN_IF_ERROR(r->optional("buckets", &s->buckets));
  for (size_t i = 0; i < s->buckets.size(); ++i) {
    int64_t const m = s->buckets[i];
    if (m < 1 || m > kMaxTokens) {
      return at_error(at.field("buckets").index(static_cast<int64_t>(i)),
                      "M = " + std::to_string(m) + " is out of range; expected 1 <= M <= 2^24");
    }
    if (i > 0 && m <= s->buckets[i - 1]) {
      return at_error(at.field("buckets").index(static_cast<int64_t>(i)),
                      "M = " + std::to_string(m) + " after " + std::to_string(s->buckets[i - 1]) +
                          "; buckets must be ascending and distinct");
    }
  }
  MOETUNE_RETURN_IF_ERROR(r->optional("routing", &s->routing));
  MOETUNE_RETURN_IF_ERROR(r->optional("policy", &s->policy));
  if (s->policy.tiny_m_threshold && *s->policy.tiny_m_threshold < 0) {
    return at_error(at.field("policy").field("tiny_m_threshold"), "must be >= 0");
  }
  if (s->policy.beyond_range_factor && !(*s->policy.beyond_range_factor >= 1.0)) {
    return at_error(at.field("policy").field("beyond_range_factor"), "must be >= 1");
  }
  if (r->has("pinned_rows")) {
    MOETUNE_RETURN_IF_ERROR(
        parse_pinned_rows(j["pinned_rows"], at.field("pinned_rows"), &s->pinned_rows));
  }
  return Status::Ok();
}

}  // namespace

Result<Recipe> load_recipe(std::string const& path) {
  auto text = read_file(path);
  if (!text.ok()) return text.error();
  return parse_recipe(*text, path);
}

Result<Recipe> parse_recipe(std::string_view text, std::string const& path) {
  auto j = parse_json(text, path);
  if (!j.ok()) return j.error();
  JsonAt const at{path, ""};
  auto r = ObjectReader::open(*j, at, {"recipe_version", "name", "shapes"});
  if (!r.ok()) return r.error();
  int version = 0;
  MOETUNE_RETURN_IF_ERROR(r->required("recipe_version", &version));
  if (version != kRecipeVersion) {
    return make_error(ErrorCode::kVersion, path,
                      "recipe_version " + std::to_string(version) + " is not readable (this " +
                          "build reads " + std::to_string(kRecipeVersion) + "); update moetune");
  }
  Recipe recipe;
  recipe.path = path;
  MOETUNE_RETURN_IF_ERROR(r->optional("name", &recipe.name));
  if (!r->has("shapes")) return r->missing("shapes");
  Json const& shapes = (*j)["shapes"];
  if (!shapes.is_array()) {
    return at_error(at.field("shapes"), "expected an array, got " + describe_json(shapes),
                    ErrorCode::kParse);
  }
  std::set<std::string> names, files;
  for (size_t i = 0; i < shapes.size(); ++i) {
    RecipeShape s;
    JsonAt const s_at = at.field("shapes").index(static_cast<int64_t>(i));
    MOETUNE_RETURN_IF_ERROR(parse_shape(shapes[i], s_at, &s));
    JsonAt const named{path, s_at.path + " (" + clip(s.name) + ")"};
    if (!names.insert(s.name).second) return at_error(named, "shape name used twice");
    if (!files.insert(table_file_name(table_key_for(s))).second) {
      return at_error(named, "writes the same table file as an earlier shape (" +
                                 table_file_name(table_key_for(s)) + "); merge the two shapes");
    }
    recipe.shapes.push_back(std::move(s));
  }
  return recipe;
}

std::string recipe_to_json(Recipe const& recipe) {
  Json shapes = Json::array();
  for (auto const& s : recipe.shapes) {
    Json pinned = Json::object();
    for (auto const& [m, row] : s.pinned_rows) {
      pinned[std::to_string(m)] =
          Json{{"config", to_json(row.config)}, {"source", to_json(row.source)}};
    }
    shapes.push_back(Json{{"name", s.name},
                          {"problem", to_json(s.problem)},
                          {"device", s.device},
                          {"backend", s.backend},
                          {"family", s.family},
                          {"family_version", s.family_version},
                          {"buckets", s.buckets},
                          {"routing", to_json(s.routing)},
                          {"policy", to_json(s.policy)},
                          {"pinned_rows", pinned}});
  }
  return print_json(
      Json{{"recipe_version", kRecipeVersion}, {"name", recipe.name}, {"shapes", shapes}}, 2);
}

TableKey table_key_for(RecipeShape const& shape, std::string const& toolchain) {
  TableKey key;
  key.num_experts = shape.problem.num_experts;
  key.intermediate_size = shape.problem.intermediate_size;
  key.hidden_size = shape.problem.hidden_size;
  key.top_k = shape.problem.top_k;
  key.activation = shape.problem.activation;
  key.dtype = shape.problem.dtype;
  if (shape.problem.quant != Quant::kNone) {  // the engines' fp8 names (table_file_name)
    key.dtype_tag = "fp8_w8a8";
    if (shape.problem.quant == Quant::kFp8Block) key.block_shape = std::pair{128, 128};
  }
  key.device_name = vllm_device_name(shape.device);
  key.family = shape.family;
  key.family_version = shape.family_version;
  key.toolchain = toolchain;
  return key;
}

Result<std::vector<std::string>> materialize(Recipe const& recipe, std::string const& out_dir,
                                             bool merge) {
  MOETUNE_RETURN_IF_ERROR(ensure_writable_dir(out_dir));
  // All-or-nothing: every shape's pair is staged (read, merged, written to temps) before any
  // file is renamed, so a failure at shape k leaves shapes 1..k-1 untouched too.
  FileTransaction tx;
  std::vector<std::string> written;
  for (auto const& shape : recipe.shapes) {
    Table table;
    table.key = table_key_for(shape);
    std::string const path = (fs::path(out_dir) / table_file_name(table.key)).string();
    if (merge) {
      auto existing = load_table(path);
      if (existing.ok()) {
        table.rows = std::move(existing->rows);
        table.extra = std::move(existing->extra);
        // Keep the toolchain the shipped rows were made with; the recipe does not know it.
        table.key.toolchain = existing->key.toolchain;
      } else if (existing.error().code != ErrorCode::kNotFound) {
        return existing.error();
      }
    }
    table.policy = shape.policy;
    table.has_manifest = true;
    for (auto const& [m, pinned] : shape.pinned_rows) {
      TableRow& row = table.rows[m];
      row.config = pinned.config;
      row.source = pinned.source;
    }
    auto staged = stage_table(table, out_dir, tx);
    if (!staged.ok()) return staged.error();
    written.push_back(*staged);
  }
  MOETUNE_RETURN_IF_ERROR(tx.commit());
  return written;
}

}  // namespace moetune::core
