// moetune run: serve one layer call through MoeRunner, as an engine would, and say which rule chose
// the config (explicit, cache, table, other_device, default or auto) and which fast paths (levers)
// the runner took. On both backends the runner itself runs (runtime/checked_run.hpp: cpu on host
// buffers, cuda on device buffers and a stream) on generated inputs, checked against the fp64
// reference.
#include <unistd.h>

#include <iostream>
#include <memory>

#include "bench/bench_run.hpp"

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/device_info.hpp"
#include "core/flat_json.hpp"
#include "core/json_text.hpp"
#include "kernels/cpu/moe_data.hpp"
#include "moetune/moe_runner.hpp"
#include "runtime/checked_run.hpp"

extern char** environ;

namespace moetune::cli {
namespace {

struct RunArgs {
  std::string backend;
  std::string problem_spec;
  int64_t m = -1;
  std::string knobs = "none";
  std::string tables;
  std::string cache;
  std::string role = "default";
  std::string routing = "uniform";
  std::string levers;  ///< "NAME=on,NAME=off": knobs added to the environment snapshot
  double budget_s = 30;
  bool capturing = false;
  bool same_device_tables = false;
  bool json = false;
};

Knobs parse_knobs_or_exit(std::string const& spec) {
  if (spec == "none") return Knobs::none();
  if (spec == "auto") return Knobs::auto_tune();
  auto text = core::read_file(spec);
  if (!text.ok()) {
    fail(core::make_error(core::ErrorCode::kInvalidArgument, "--knobs",
                          "'" + spec + "' is not none, auto or a readable config file (" +
                              text.error().to_string() + ")"));
  }
  core::MoeConfig c = unwrap(core::parse_moe_config_json(*text, spec));
  unwrap(core::validate(c, spec));
  return Knobs::explicit_config(c);
}

/// {"origin", "deployment", "on", "levers": [{"name", "on", "decided_by", "rule"}]}.
std::string levers_json(RunnerLevers const& lv) {
  using core::json_string;
  std::string out = "{\"origin\": " + json_string(lv.origin) + ", \"deployment\": " +
                    (lv.deployment ? json_string(core::to_string(*lv.deployment)) : "null") +
                    ", \"on\": " + json_string(on_names(lv.fast_paths)) + ", \"levers\": [";
  for (size_t i = 0; i < lv.levers.size(); ++i) {
    auto const& l = lv.levers[i];
    out += std::string(i ? ", " : "") + "{\"name\": " + json_string(l.name) +
           ", \"on\": " + (l.on ? "true" : "false") +
           ", \"decided_by\": " + json_string(std::string(core::to_string(l.decided_by))) +
           ", \"rule\": " + json_string(l.rule) + "}";
  }
  return out + "]}";
}

void print_json(MoeRunner const& runner, runtime::CheckedRun const& r) {
  using core::json_string;
  Choice const& c = r.choice;
  std::cout << "{\"m\": " << c.m << ", \"bucket\": " << c.bucket
            << ", \"rule\": " << json_string(to_string(c.rule))
            << ", \"config\": " << core::to_json_text(c.config, -1)
            << ", \"config_short\": " << json_string(core::short_string(c.config))
            << ", \"source\": " << (c.source ? core::to_json_text(*c.source, -1) : "null")
            << ", \"explain\": " << json_string(c.explain)
            << ", \"backend\": " << json_string(runner.backend_name())
            << ", \"problem\": " << json_string(core::format_problem_spec(runner.problem()))
            << ", \"cache\": " << json_string(runner.cache_path())
            << ", \"table\": " << json_string(runner.table_path())
            << ", \"levers\": " << levers_json(runner.levers())
            << ", \"executed_by\": " << json_string(r.executed_by)
            << ", \"rel_l2_error\": " << core::json_double(r.check.rel_l2_error)
            << ", \"digest\": " << json_string(r.check.digest)
            << ", \"passed\": " << (r.passed ? "true" : "false") << ", \"warnings\": [";
  auto const w = runner.warnings();
  for (size_t i = 0; i < w.size(); ++i) std::cout << (i ? ", " : "") << json_string(w[i]);
  std::cout << "]}\n";
}

int run_run(RunArgs const& args) {
  std::string const backend = args.backend.empty() ? default_backend() : args.backend;
  check_backend_name(backend, "--backend");
  core::MoeProblem const problem = parse_problem_or_exit(args.problem_spec);
  check_m(args.m, "--m");
  core::MoeProblem at_m = problem;
  at_m.num_tokens = args.m;
  unwrap(core::check_host_bytes(kernels::cpu::host_bytes_estimate(at_m), "--m",
                                "M=" + std::to_string(args.m) + " of " + core::to_string(problem),
                                "use a smaller --m"));
  check_tables_dir(args.tables, "--tables");
  Knobs const knobs = parse_knobs_or_exit(args.knobs);
  RunnerOptions opts;
  opts.tables_dir = args.tables;
  opts.same_device_tables = args.same_device_tables;
  opts.cache_path = args.cache;
  opts.role = args.role;
  opts.routing = unwrap(core::parse_routing(args.routing));
  opts.auto_budget_s = args.budget_s;
  opts.max_tokens = std::max<int64_t>(args.m, 1);
  // Levers: this process's MOETUNE_* variables with --levers on top, resolved once by the runner
  // (a bad variable or knob is exit 2 before anything runs).
  auto env = bench::apply_lever_overrides(core::snapshot_environment(environ), args.levers);
  if (!env.ok()) fail(env.error());
  opts.levers.env = std::move(env).value();
  opts.levers.known_env_vars.clear();
  for (auto const& v : env_var_table()) opts.levers.known_env_vars.emplace_back(v.name);
  if (args.json) opts.warn = [](std::string const&) {};  // warnings go into the JSON
  auto runner = unwrap(MoeRunner::create(problem, backend, opts));
  runner->set_capturing(args.capturing);
  runtime::CheckedRun const r = unwrap(runtime::run_checked(*runner, opts.routing, args.m, knobs));
  if (args.json) {
    print_json(*runner, r);
  } else {
    Choice const& choice = r.choice;
    std::cout << "M=" << choice.m << " -> " << to_string(choice.rule) << ": "
              << core::short_string(choice.config) << "\n  explain: " << choice.explain
              << "\n  levers: " << on_names(runner->levers().fast_paths) << " (from "
              << runner->levers().origin << ")\n  check: rel_l2_error " << r.check.rel_l2_error
              << (r.passed ? " (passed)" : " (FAILED)") << " via " << r.executed_by << "\n";
  }
  return r.passed ? kExitOk : kExitFindings;
}

}  // namespace

void setup_run(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RunArgs>();
  add_backend_option(app, &args->backend);
  add_problem_option(app, &args->problem_spec);
  app.get_option("--problem")->required();
  app.add_option("--m", args->m, "token count M of the call")->required()->check(decimal_integer());
  app.add_option("--knobs", args->knobs,
                 "none (cache -> table -> default), auto (tune this bucket once, cache it), or a "
                 "JSON config file (explicit)")
      ->capture_default_str();
  app.add_option("--tables", args->tables, "tables directory (e.g. tables/cpu)");
  app.add_flag("--same-device-tables", args->same_device_tables,
               "use no table made on another device (also MOETUNE_TABLES_SAME_DEVICE=1): the "
               "cache or default config serves, with a warning. By default such a table serves "
               "and the rule is other_device");
  app.add_option("--cache", args->cache,
                 "knob cache file (default: $MOETUNE_CACHE, else "
                 "~/.cache/moetune/knobs-<role>.json)");
  app.add_option("--role", args->role, "deployment role (names the default cache file)")
      ->capture_default_str();
  app.add_option("--routing", args->routing,
                 "routing profile the cache is scoped by and auto "
                 "tunes on")
      ->capture_default_str();
  app.add_option("--budget-s", args->budget_s, "time budget of one auto sweep, seconds")
      ->capture_default_str()
      ->check(finite_number(0, 86400, /*lo_inclusive=*/false));
  app.add_option("--levers", args->levers,
                 "force fast paths: NAME=on|off[,NAME=on|off], as MOETUNE_LEVER_<NAME> would "
                 "(moetune levers list)");
  app.add_flag("--capturing", args->capturing,
               "act as if a CUDA graph were being captured (auto must refuse to tune); for tests "
               "and the cpu backend, which has no graphs");
  app.add_flag("--json", args->json,
               "one JSON object: m bucket rule config source explain ... levers executed_by "
               "rel_l2_error digest passed warnings");
  app.callback([args, &exit_code] { exit_code = run_run(*args); });
}

}  // namespace moetune::cli
