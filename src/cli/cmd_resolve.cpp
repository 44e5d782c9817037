// moetune resolve: which row a table serves for a token count M, by which rule, and from where.
#include <iostream>
#include <memory>
#include <vector>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "core/json_text.hpp"
#include "core/resolver.hpp"
#include "core/table_lookup.hpp"

namespace moetune::cli {
namespace {

struct ResolveArgs {
  std::string table_path;
  std::vector<int64_t> ms;
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

void print_resolution(core::Resolution const& r) {
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
  std::string const engine = format_engine_fields(r.engine_fields, r.absent_fields);
  if (!engine.empty()) std::cout << "  engine fields: " << engine << "\n";
  std::cout << "  explain: " << r.explain << "\n";
}

void run_resolve(ResolveArgs const& args) {
  for (int64_t const m : args.ms) check_m(m, "--m");
  // Opened for lookups: a table of 100k rows costs its keys and the rows asked for, not a parse
  // of every row (core/table_lookup.hpp); errors are load_table's.
  core::TableLookup table = unwrap(core::TableLookup::open(args.table_path));
  std::optional<core::MoeProblem> problem;
  if (!args.problem_spec.empty()) {
    problem = parse_problem_or_exit(args.problem_spec);
    unwrap(core::check_key_matches(table.head().key, *problem, args.table_path));
  }
  for (int64_t const m : args.ms) {
    core::Resolution const r =
        unwrap(core::resolve(table, m, default_config_for(table.head(), args.table_path, problem)));
    if (!args.json) {
      print_resolution(r);
    } else if (args.ms.size() == 1) {
      std::cout << core::to_json_text(r);
    } else {
      std::cout << core::to_json_text(r, -1) << "\n";  // JSON lines, one per M
    }
  }
}

}  // namespace

void setup_resolve(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ResolveArgs>();
  app.add_option("--table", args->table_path, "the vLLM table file (its .moetune manifest is read)")
      ->required();
  app.add_option("--m", args->ms, "token count M to resolve; several as 1,16,24 (or --m again)")
      ->required()
      ->delimiter(',')
      ->check(decimal_integer());
  app.add_flag("--json", args->json,
               "print one JSON object: m, key, rule, config, source, explain, engine_fields, "
               "absent_fields (one object per line for several M)");
  add_problem_option(app, &args->problem_spec);
  app.callback([args, &exit_code] {
    run_resolve(*args);
    exit_code = kExitOk;
  });
}

}  // namespace moetune::cli
