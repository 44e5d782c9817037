// moetune defaults: the config a backend's default rule gives each problem at each M (what a
// bucket gets when no table row and no cache entry serves it), from the backend itself, so tools
// that price or document the rule ask the binary instead of keeping a copy of it. The backend's
// built-in fast paths apply, as on a resolver miss (`moetune resolve`); no GPU is needed.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/bench_args.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "cli/json_out.hpp"
#include "core/config.hpp"

namespace moetune::cli {
namespace {

struct DefaultsArgs {
  std::string backend;
  std::vector<std::string> problems;
  std::string m_list;
  bool json = false;
};

/// "E,K,I,top_k,act" of a problem: the first columns of the text form.
std::string shape_columns(core::MoeProblem const& p) {
  return std::to_string(p.num_experts) + "," + std::to_string(p.hidden_size) + "," +
         std::to_string(p.intermediate_size) + "," + std::to_string(p.top_k) + "," +
         std::string(core::to_string(p.activation));
}

void run_defaults(DefaultsArgs const& args) {
  std::string const backend_name = args.backend.empty() ? default_backend() : args.backend;
  check_backend_name(backend_name, "--backend");
  std::vector<core::MoeProblem> problems;
  for (auto const& spec : args.problems) problems.push_back(parse_problem_or_exit(spec));
  std::vector<int64_t> const ms = parse_m_list(args.m_list);
  if (ms.empty()) throw CliExit{kExitBadInput, "--m is empty; write e.g. --m 1,16,256"};
  std::unique_ptr<core::Backend> const backend = backend_or_exit(backend_name);
  if (!args.json) std::cout << "E,K,I,top_k,act,M,gemm1,gemm2\n";
  for (core::MoeProblem p : problems) {
    for (int64_t const m : ms) {
      p.num_tokens = m;
      core::MoeConfig const c = backend->default_config(p);
      std::string const g1 = core::short_string(c.gemm1), g2 = core::short_string(c.gemm2);
      if (!args.json) {
        std::cout << shape_columns(p) << "," << m << "," << g1 << "," << g2 << "\n";
        continue;
      }
      std::cout << "{\"backend\": " << json_quote(backend_name)
                << ", \"problem\": " << json_quote(core::to_string(p)) << ", \"m\": " << m
                << ", \"gemm1\": " << json_quote(g1) << ", \"gemm2\": " << json_quote(g2)
                << ", \"config\": " << json_quote(core::to_string(c)) << "}\n";
    }
  }
}

}  // namespace

void setup_defaults(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<DefaultsArgs>();
  add_backend_option(app, &args->backend);
  app.add_option("--problem", args->problems,
                 "a problem, e.g. E=128,K=2048,I=768,topk=8,act=silu (repeat for several)")
      ->required();
  app.add_option("--m", args->m_list, "token counts, e.g. 1,16,256")->required();
  app.add_flag("--json", args->json,
               "one JSON object per problem and M (backend, problem, m, gemm1, gemm2, config) "
               "instead of CSV lines E,K,I,top_k,act,M,gemm1,gemm2");
  app.callback([args, &exit_code] {
    run_defaults(*args);
    exit_code = kExitOk;
  });
}

}  // namespace moetune::cli
