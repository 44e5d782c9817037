// moetune run: serve one layer call through MoeRunner, as an engine would, and say which rule chose
// the config (explicit, cache, table, default or auto). On cpu the runner runs on generated host
// data and the output is checked against the fp64 reference; on cuda the chosen config runs in the
// cuda testbed (device buffers, reference check).
#include <iostream>
#include <memory>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "core/atomic_file.hpp"
#include "core/json_text.hpp"
#include "kernels/cpu/moe_data.hpp"
#include "kernels/cpu/output_check.hpp"
#include "kernels/cpu/reference.hpp"
#include "kernels/testbed.hpp"
#include "moetune/moe_runner.hpp"
#include "tuner/flat_json.hpp"

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
  double budget_s = 30;
  bool capturing = false;
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

struct Checked {
  double rel_l2_error = 0;
  bool passed = false;
  std::string executed_by;
};

/// cpu: the runner itself runs on generated host data; checked against the fp64 reference.
Checked run_on_cpu(MoeRunner& runner, core::RoutingProfile const& routing, int64_t m,
                   Knobs const& knobs, Choice* choice) {
  core::MoeProblem p = runner.problem();
  p.num_tokens = m;
  auto data = unwrap(kernels::cpu::generate_moe_data(p, routing, 1));
  size_t const out_bytes = static_cast<size_t>(m * p.hidden_size) * core::dtype_bytes(p.dtype);
  std::vector<unsigned char> out(out_bytes);
  kernels::Tolerance const tol = kernels::tolerance_for(p.dtype);
  kernels::cpu::poison_output(p.dtype, out.data(), m * p.hidden_size);
  unwrap(runner.run(nullptr, data.x_data(), data.routing.topk_ids.data(),
                    data.routing.topk_weights.data(), data.w1_data(), data.w2_data(), out.data(), m,
                    knobs, choice));
  if (m == 0) return {0, true, "runner"};
  auto ref = unwrap(kernels::cpu::reference_moe(p, data.view()));
  auto r = kernels::cpu::check_output(p.dtype, out.data(), ref, tol);
  return {r.rel_l2_error, kernels::cpu::check_passed(r, tol), "runner"};
}

/// cuda: the chosen config runs in the cuda testbed (it owns device buffers and the reference).
Checked run_on_testbed(std::string const& backend, core::MoeProblem p, int64_t m,
                       core::RoutingProfile const& routing, core::MoeConfig const& config) {
  p.num_tokens = m;
  auto testbed = unwrap(kernels::make_testbed(backend));
  unwrap(testbed->prepare(p, routing, 1));
  auto r = unwrap(testbed->check(config));
  return {r.rel_l2_error, kernels::cpu::check_passed(r, kernels::tolerance_for(p.dtype)),
          "testbed"};
}

void print_json(MoeRunner const& runner, Choice const& c, Checked const& chk) {
  using tuner::json_string;
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
            << ", \"executed_by\": " << json_string(chk.executed_by)
            << ", \"rel_l2_error\": " << tuner::json_double(chk.rel_l2_error)
            << ", \"passed\": " << (chk.passed ? "true" : "false") << ", \"warnings\": [";
  auto const w = runner.warnings();
  for (size_t i = 0; i < w.size(); ++i) std::cout << (i ? ", " : "") << json_string(w[i]);
  std::cout << "]}\n";
}

int run_run(RunArgs const& args) {
  std::string const backend = args.backend.empty() ? default_backend() : args.backend;
  check_backend_name(backend, "--backend");
  core::MoeProblem const problem = parse_problem_or_exit(args.problem_spec);
  check_m(args.m, "--m");
  Knobs const knobs = parse_knobs_or_exit(args.knobs);
  RunnerOptions opts;
  opts.tables_dir = args.tables;
  opts.cache_path = args.cache;
  opts.role = args.role;
  opts.routing = unwrap(core::parse_routing(args.routing));
  opts.auto_budget_s = args.budget_s;
  opts.max_tokens = std::max<int64_t>(args.m, 1);
  if (args.json) opts.warn = [](std::string const&) {};  // warnings go into the JSON
  auto runner = unwrap(MoeRunner::create(problem, backend, opts));
  runner->set_capturing(args.capturing);
  Choice choice;
  Checked chk;
  if (backend == "cpu") {
    chk = run_on_cpu(*runner, opts.routing, args.m, knobs, &choice);
  } else {
    choice = unwrap(runner->choose(args.m, knobs));
    chk = run_on_testbed(backend, runner->problem(), args.m, opts.routing, choice.config);
  }
  if (args.json) {
    print_json(*runner, choice, chk);
  } else {
    std::cout << "M=" << choice.m << " -> " << to_string(choice.rule) << ": "
              << core::short_string(choice.config) << "\n  explain: " << choice.explain
              << "\n  check: rel_l2_error " << chk.rel_l2_error
              << (chk.passed ? " (passed)" : " (FAILED)") << " via " << chk.executed_by << "\n";
  }
  return chk.passed ? kExitOk : kExitFindings;
}

}  // namespace

void setup_run(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<RunArgs>();
  add_backend_option(app, &args->backend);
  add_problem_option(app, &args->problem_spec);
  app.get_option("--problem")->required();
  app.add_option("--m", args->m, "token count M of the call")->required();
  app.add_option("--knobs", args->knobs,
                 "none (cache -> table -> default), auto (tune this bucket once, cache it), or a "
                 "JSON config file (explicit)")
      ->capture_default_str();
  app.add_option("--tables", args->tables, "tables directory (e.g. tables/cpu)");
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
      ->capture_default_str();
  app.add_flag("--capturing", args->capturing,
               "act as if a CUDA graph were being captured (auto must refuse to tune); for tests "
               "and the cpu backend, which has no graphs");
  app.add_flag("--json", args->json,
               "one JSON object: m bucket rule config source explain ... passed warnings");
  app.callback([args, &exit_code] { exit_code = run_run(*args); });
}

}  // namespace moetune::cli
