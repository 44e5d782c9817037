// moetune tune: sweep a recipe's buckets on a backend (tuner/sweep.hpp), write the winners into
// each shape's table with their measurement as the source, and print the table. Pinned rows always
// win over tuned ones; --merge keeps the table's other rows. Exit 1 when a bucket had no surviving
// candidate (its row is left as it was), 2 on bad input, before any kernel runs.
#include <chrono>
#include <ctime>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "cli/json_out.hpp"
#include "core/atomic_file.hpp"
#include "kernels/testbed.hpp"
#include "tuner/sweep.hpp"

namespace moetune::cli {
namespace {

struct TuneArgs {
  std::string recipe_path;
  std::string buckets;  ///< "1,4,16"; empty = the recipe's
  std::string backend;  ///< empty = the shape's backend
  std::string out_dir;  ///< empty = tables/<device>
  bool merge = false;
  bool json = false;
  bool measure_pinned = false;  ///< also sweep pinned buckets (report only; the pin still wins)
  int reps = 5;
  int warmup = 2;
};

std::vector<int64_t> parse_buckets(std::string const& list) {
  std::vector<int64_t> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > core::kMaxTokens) {
      throw CliExit{kExitBadInput, "--buckets '" + list + "': '" + item +
                                       "' is not a token count in [1, " +
                                       std::to_string(core::kMaxTokens) + "]; write e.g. 1,4,16"};
    }
    out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string today_utc() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", &tm);
  return buf;
}

/// The backend a shape is tuned on: --backend / $MOETUNE_BACKEND when given, else the shape's.
/// A table's family is fixed by its recipe, so a mismatch is an error, not a silent switch.
std::string pick_backend(TuneArgs const& args, core::RecipeShape const& shape,
                         std::string const& where) {
  std::string chosen = args.backend;
  std::string origin = "--backend";
  if (chosen.empty() && std::getenv("MOETUNE_BACKEND") != nullptr) {
    chosen = default_backend();
    origin = "MOETUNE_BACKEND";
  }
  std::string const wanted = shape.backend.empty() ? default_backend() : shape.backend;
  if (!chosen.empty() && chosen != wanted) {
    throw CliExit{kExitBadInput, where + ": the shape is tuned on backend '" + wanted +
                                     "' (family " + shape.family + ") but " + origin + " is '" +
                                     chosen + "'; drop " + origin + " or use a recipe for " +
                                     chosen};
  }
  check_backend_name(wanted, where + ": backend");
  auto probe = kernels::make_backend(wanted);
  if (!probe.ok()) {
    throw CliExit{kExitBadInput, where + ": the recipe's backend is " + wanted +
                                     ", which is unavailable here (" + probe.error().to_string() +
                                     "); run on a machine with a GPU, or tune a " +
                                     "recipe whose backend is cpu (e.g. recipes/demo.json)"};
  }
  return wanted;
}

std::string reproduce_command(TuneArgs const& args, std::string const& backend, int64_t bucket,
                              std::string const& out_dir) {
  return "moetune tune --recipe " + args.recipe_path + " --buckets " + std::to_string(bucket) +
         " --backend " + backend + " --out " + out_dir + " --merge";
}

core::Source tuned_source(TuneArgs const& args, tuner::BucketResult const& r,
                          std::string const& device, std::string const& backend,
                          std::string const& out_dir, core::RoutingProfile const& routing) {
  core::Source s;
  s.kind = "tuned";
  s.date = today_utc();
  s.device = device;
  s.protocol = "moetune-sweep-v1: in-process, " + std::to_string(args.warmup) +
               " warm-up, median of " + std::to_string(args.reps) +
               ", default kept unless beaten by >2%, routing " + core::format_routing(routing);
  s.numbers = {{"time_us", r.time_us},
               {"default_us", r.default_us},
               {"candidates", double(r.candidates)},
               {"rejected", double(r.rejected)}};
  s.digest = r.digest;
  s.command = reproduce_command(args, backend, r.bucket, out_dir);
  return s;
}

std::string bucket_line(tuner::BucketResult const& r) {
  std::ostringstream out;
  out << "bucket " << r.bucket << ": " << core::short_string(r.winner) << "  "
      << format_us(r.time_us) << " us";
  if (r.default_ok) {
    char m[32];
    std::snprintf(m, sizeof(m), "%+.1f%%", 100 * tuner::margin(r.default_us, r.time_us));
    out << "  default " << format_us(r.default_us) << " us  margin " << m
        << (r.incumbent_kept ? "  (default kept)" : "");
  } else {
    out << "  (default config failed its check)";
  }
  out << "  [" << r.candidates << " candidates, " << r.rejected << " rejected";
  if (r.wrong > 0) out << ", " << r.wrong << " wrong";
  if (r.failed > 0) out << ", " << r.failed << " failed";
  out << "]";
  return out.str();
}

/// Everything a shape needs before any kernel runs; building it checks all bad input (backend,
/// out dir, an existing table under --merge, buckets) so a failure changes no file.
struct ShapePlan {
  core::RecipeShape const* shape = nullptr;
  std::string where;
  std::string backend_name;
  std::string out_dir;
  std::unique_ptr<kernels::Testbed> testbed;
  core::DeviceInfo device;
  core::Table table;
  std::string path;
  std::vector<int64_t> buckets;
};

ShapePlan plan_shape(TuneArgs const& args, core::Recipe const& recipe, size_t index) {
  ShapePlan plan;
  plan.shape = &recipe.shapes[index];
  core::RecipeShape const& shape = *plan.shape;
  plan.where = args.recipe_path + ": shapes[" + std::to_string(index) + "] (" + shape.name + ")";
  plan.backend_name = pick_backend(args, shape, plan.where);
  plan.out_dir =
      args.out_dir.empty() ? "tables/" + core::vllm_device_name(shape.device) : args.out_dir;
  unwrap(core::ensure_writable_dir(plan.out_dir));
  plan.testbed = unwrap(kernels::make_testbed(plan.backend_name));
  plan.device = plan.testbed->backend().device();

  core::TableKey const key = core::table_key_for(shape, plan.device.toolchain);
  plan.path = plan.out_dir + "/" + core::vllm_file_name(key);
  if (args.merge) {
    auto existing = core::load_table(plan.path);
    if (existing.ok()) {
      plan.table = std::move(existing).value();
    } else if (existing.error().code != core::ErrorCode::kNotFound) {
      fail(existing.error());
    }
  }
  plan.table.key = key;
  plan.table.policy = shape.policy;
  plan.table.has_manifest = true;
  plan.buckets = args.buckets.empty() ? shape.buckets : parse_buckets(args.buckets);
  return plan;
}

/// Tunes one planned shape and writes its table. Returns false when a bucket had no surviving
/// candidate.
bool tune_shape(TuneArgs const& args, ShapePlan& plan, JsonOut& json) {
  core::RecipeShape const& shape = *plan.shape;
  if (!args.json) {
    std::cout << "tuning " << shape.name << " on " << plan.backend_name << " (" << plan.device.name
              << "): " << core::to_string(shape.problem) << "\n";
  }
  json.begin_shape(shape.name, plan.path, plan.backend_name);
  tuner::SweepOptions options;
  options.warmup = args.warmup;
  options.reps = args.reps;
  options.seed = shape.routing.seed;
  bool all_ok = true;
  for (int64_t bucket : plan.buckets) {
    auto pin = shape.pinned_rows.find(bucket);
    bool const pinned = pin != shape.pinned_rows.end();
    if (pinned && !args.json) {
      std::cout << "bucket " << bucket << ": pinned " << core::short_string(pin->second.config)
                << " (" << pin->second.source.kind << " " << pin->second.source.date << ")"
                << (args.measure_pinned ? "; the sweep, for comparison only:" : ", not tuned")
                << std::endl;
    }
    if (pinned && !args.measure_pinned) {
      json.pinned_bucket(bucket, pin->second.config);
      continue;
    }
    auto result = tuner::sweep_bucket(*plan.testbed, shape.problem, shape.routing, bucket, options);
    if (!result.ok()) {
      if (result.error().code != core::ErrorCode::kUnsupported) fail(result.error());
      std::cerr << "moetune tune: " << plan.where << ": " << result.error().to_string()
                << "; the bucket keeps its current row\n";
      json.failed_bucket(bucket, result.error().to_string());
      all_ok = false;
      continue;
    }
    if (!args.json) std::cout << (pinned ? "  " : "") << bucket_line(*result) << std::endl;
    if (pinned) {
      double const pinned_us = pinned_time_us(*result, pin->second.config);
      if (!args.json) {
        std::cout << "  the pin itself: "
                  << (pinned_us > 0 ? format_us(pinned_us) + " us"
                                    : std::string("not in the search space (or failed)"))
                  << std::endl;
      }
      json.pinned_bucket(bucket, pin->second.config, &*result);
      continue;
    }
    json.tuned_bucket(*result);
    plan.table.rows[bucket] =
        core::TableRow{.config = result->winner,
                       .source = tuned_source(args, *result, plan.device.name, plan.backend_name,
                                              plan.out_dir, shape.routing)};
  }
  for (auto const& [bucket, pin] : shape.pinned_rows) {
    plan.table.rows[bucket] = core::TableRow{.config = pin.config, .source = pin.source};
  }
  std::string const written = unwrap(core::save_table(plan.table, plan.out_dir));
  json.end_shape();
  if (!args.json) std::cout << "\n" << format_table_text(plan.table, written);
  return all_ok;
}

int run_tune(TuneArgs const& args) {
  if (args.reps < 1 || args.warmup < 0) {
    throw CliExit{kExitBadInput, "--reps must be >= 1 and --warmup >= 0; seen --reps " +
                                     std::to_string(args.reps) + " --warmup " +
                                     std::to_string(args.warmup)};
  }
  if (!args.buckets.empty()) parse_buckets(args.buckets);  // bad input fails before any run
  if (!args.backend.empty()) check_backend_name(args.backend, "--backend");
  core::Recipe recipe = load_recipe_or_exit(args.recipe_path);
  std::vector<ShapePlan> plans;
  for (size_t i = 0; i < recipe.shapes.size(); ++i) plans.push_back(plan_shape(args, recipe, i));
  JsonOut json(args.json);
  bool all_ok = true;
  for (ShapePlan& plan : plans) all_ok = tune_shape(args, plan, json) && all_ok;
  json.finish(std::cout);
  return all_ok ? kExitOk : kExitFindings;
}

}  // namespace

void setup_tune(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<TuneArgs>();
  app.add_option("--recipe", args->recipe_path, "the recipe (JSON)")->required();
  app.add_option("--buckets", args->buckets,
                 "token counts to tune, e.g. 1,4,16 (default: the recipe's buckets)");
  add_backend_option(app, &args->backend);
  app.add_option("--out", args->out_dir, "directory the tables go to (default: tables/<device>)");
  app.add_flag("--merge", args->merge,
               "keep rows of the existing table that this run does not tune");
  app.add_flag("--json", args->json, "print the per-bucket results as one JSON object");
  app.add_flag(
      "--measure-pinned", args->measure_pinned,
      "sweep pinned buckets too and print the result next to the pin (the pin still wins)");
  app.add_option("--reps", args->reps, "timed runs per candidate (median decides)")
      ->capture_default_str();
  app.add_option("--warmup", args->warmup, "untimed runs per candidate before timing")
      ->capture_default_str();
  app.callback([args, &exit_code] { exit_code = run_tune(*args); });
}

}  // namespace moetune::cli
