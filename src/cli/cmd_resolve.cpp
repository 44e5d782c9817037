// moetune resolve: which row a table serves for a token count M, by which rule, and from where.
#include <iostream>
#include <memory>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "core/json_text.hpp"
#include "core/resolver.hpp"

namespace moetune::cli {
namespace {

struct ResolveArgs {
  std::string table_path;
  int64_t m = -1;
  bool json = false;
  std::string problem_spec;
};

/// The default-config callback: the backend named by the table's family, built on first use only
/// (an exact-key answer never needs a backend, so it works on a machine without one).
core::DefaultConfigFn default_config_for(core::Table const& table, std::string const& path,
                                         std::optional<core::MoeProblem> const& problem) {
  return [&table, path, problem](int64_t m) {
    auto backend = backend_for_table(table.key, path);
    core::MoeProblem p = problem ? *problem : problem_from_key(table.key, m, path);
    p.num_tokens = m;
    return backend->default_config(p);
  };
}

void run_resolve(ResolveArgs const& args) {
  check_m(args.m, "--m");
  core::Table table = load_table_or_exit(args.table_path);
  std::optional<core::MoeProblem> problem;
  if (!args.problem_spec.empty()) {
    problem = parse_problem_or_exit(args.problem_spec);
    unwrap(core::check_key_matches(table.key, *problem, args.table_path));
  }
  core::Resolution r =
      core::resolve(table, args.m, default_config_for(table, args.table_path, problem));
  if (args.json) {
    std::cout << core::to_json_text(r);
    return;
  }
  std::cout << "M=" << r.m << " -> "
            << (r.key ? "key " + std::to_string(*r.key) : std::string("backend default")) << " ("
            << core::to_string(r.rule) << ")\n";
  std::cout << "  config: " << core::short_string(r.config) << "  " << core::to_string(r.config)
            << "\n";
  if (r.source) {
    core::Source const& s = *r.source;
    std::cout << "  source: " << s.kind << (s.date.empty() ? "" : " " + s.date)
              << (s.device.empty() ? "" : " on " + s.device)
              << (s.protocol.empty() ? "" : " (" + s.protocol + ")") << "\n";
    if (!s.command.empty()) std::cout << "  reproduce: " << s.command << "\n";
  } else {
    std::cout << "  source: none recorded (a plain vLLM file)\n";
  }
  std::cout << "  explain: " << r.explain << "\n";
}

}  // namespace

void setup_resolve(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ResolveArgs>();
  app.add_option("--table", args->table_path, "the vLLM table file (its .moetune manifest is read)")
      ->required();
  app.add_option("--m", args->m, "token count M to resolve")->required()->check(decimal_integer());
  app.add_flag("--json", args->json,
               "print one JSON object: m, key, rule, config, source, explain");
  add_problem_option(app, &args->problem_spec);
  app.callback([args, &exit_code] {
    run_resolve(*args);
    exit_code = kExitOk;
  });
}

}  // namespace moetune::cli
