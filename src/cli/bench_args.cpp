// Shared bench/ab options; see bench_args.hpp.
#include "cli/bench_args.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "core/device_info.hpp"
#include "core/device_label.hpp"
#include "core/names.hpp"
#include "kernels/cpu/moe_data.hpp"
#include "kernels/testbed.hpp"
#include "runtime/device_env.hpp"

extern char** environ;

namespace moetune::cli {

void add_series_options(CLI::App& app, BenchArgs* a) {
  app.add_option("--recipe", a->recipe, "measure every shape of a recipe (its buckets unless --m)");
  add_problem_option(app, &a->problem);
  app.add_option("--m", a->m_list, "token counts M, e.g. 1,4,16,64 (required with --problem)");
  app.add_option("--routing", a->routing,
                 "routing profile: uniform, balanced, block_permutation, zipf[:s=1.2], "
                 "single_expert, trace:PATH, each [,seed=N] (default: the recipe's, else uniform)");
  app.add_option("--repeats", a->repeats, "timed runs per point (default 10)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--warmup", a->warmup, "untimed runs per point before timing (default 2)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--seed", a->seed,
                 "inputs of point M are seeded by seed + M; bootstraps by seed (default 1)");
  add_backend_option(app, &a->backend);
  app.add_flag("--same-device-tables", a->same_device_tables,
               "use no table made on another device (its device_name is not this device's; "
               "also MOETUNE_TABLES_SAME_DEVICE=1): such points run the default config. By "
               "default such a table serves and its points' rule is other_device");
}

std::vector<int64_t> parse_m_list(std::string const& list) {
  std::vector<int64_t> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    bool const digits = !item.empty() && item.size() <= 9 &&
                        item.find_first_not_of("0123456789") == std::string::npos;
    long long const v = digits ? std::stoll(item) : -1;
    if (!digits || v < 1 || v > core::kMaxTokens) {
      throw CliExit{kExitBadInput, "--m '" + core::clip(list) + "': '" + core::clip(item) +
                                       "' is not a token count in [1, " +
                                       std::to_string(core::kMaxTokens) + "]; write e.g. 1,4,16"};
    }
    out.push_back(v);
  }
  if (!list.empty() && list.back() == ',') {
    throw CliExit{kExitBadInput, "--m '" + core::clip(list) + "' ends with a comma; remove it"};
  }
  return out;
}

std::string bench_backend(BenchArgs const& args) {
  std::string const b = args.backend.empty() ? default_backend() : args.backend;
  check_backend_name(b, "--backend");
  return b;
}

namespace {

/// This machine's device label for `backend` ($MOETUNE_DEVICE_NAME, else the backend's device;
/// "" when the backend cannot start here, which the run then reports itself).
std::string local_device_label(std::string const& backend) {
  core::DeviceInfo device;
  if (auto b = kernels::make_backend(backend); b.ok()) device = (*b)->device();
  return unwrap(core::local_device_label(device));
}

void attach_table(BenchArgs const& args, std::string const& backend, bench::BenchSeries& s) {
  if (args.tables.empty()) return;
  bench::TableDevicePolicy const policy{
      .local_device = local_device_label(backend),
      .same_device_tables =
          args.same_device_tables || unwrap(runtime::same_device_tables_from_env())};
  unwrap(bench::find_table(args.tables, policy, &s));
}

/// Every point's inputs are generated on the host: a size this machine cannot hold is bad
/// input, refused before any file or process is made.
void check_series_fit(std::vector<bench::BenchSeries> const& series) {
  for (auto const& s : series) {
    if (s.ms.empty()) continue;
    core::MoeProblem p = s.problem;
    p.num_tokens = *std::max_element(s.ms.begin(), s.ms.end());
    unwrap(core::check_host_bytes(kernels::cpu::host_bytes_estimate(p), "--m",
                                  "M=" + std::to_string(p.num_tokens) + " of series " + s.name,
                                  "measure smaller M"));
  }
}

}  // namespace

std::vector<bench::BenchSeries> build_series(BenchArgs const& args, std::string const& backend) {
  if (args.recipe.empty() == args.problem.empty()) {
    throw CliExit{kExitBadInput, "give exactly one of --recipe R and --problem SPEC (with --m)"};
  }
  std::vector<int64_t> const ms =
      args.m_list.empty() ? std::vector<int64_t>{} : parse_m_list(args.m_list);
  std::optional<core::RoutingProfile> routing;
  if (!args.routing.empty()) {
    auto r = core::parse_routing(args.routing);
    if (!r.ok()) throw CliExit{kExitBadInput, "--routing: " + r.error().to_string()};
    routing = *r;
  }
  std::vector<bench::BenchSeries> out;
  if (!args.problem.empty()) {
    if (ms.empty()) throw CliExit{kExitBadInput, "--problem needs --m, e.g. --m 1,16,64"};
    bench::BenchSeries s{.name = "problem", .problem = parse_problem_or_exit(args.problem)};
    if (backend == "cpu") s.problem.arch = "cpu";
    s.routing = routing.value_or(core::RoutingProfile{});
    s.ms = ms;
    attach_table(args, backend, s);
    out.push_back(std::move(s));
    check_series_fit(out);
    return out;
  }
  core::Recipe const recipe = load_recipe_or_exit(args.recipe);
  for (size_t i = 0; i < recipe.shapes.size(); ++i) {
    auto const& shape = recipe.shapes[i];
    if (!shape.backend.empty() && shape.backend != backend) {
      throw CliExit{kExitBadInput, args.recipe + ": shapes[" + std::to_string(i) + "] (" +
                                       shape.name + ") runs on backend '" + shape.backend +
                                       "' but this bench runs on '" + backend +
                                       "'; pass --backend " + shape.backend +
                                       " or use a recipe for " + backend};
    }
    bench::BenchSeries s{.name = shape.name, .problem = shape.problem};
    s.routing = routing.value_or(shape.routing);
    s.ms = ms.empty() ? shape.buckets : ms;
    attach_table(args, backend, s);
    out.push_back(std::move(s));
  }
  check_series_fit(out);
  return out;
}

bench::BenchOptions bench_options(BenchArgs const& args, std::string const& backend) {
  bench::BenchOptions o;
  o.warmup = args.warmup;
  o.repeats = args.repeats;
  o.seed = args.seed;
  o.cooldown_s = args.cooldown_s >= 0 ? args.cooldown_s : (backend == "cuda" ? 1.0 : 0.0);
  auto env = bench::apply_lever_overrides(core::snapshot_environment(environ), args.levers);
  if (!env.ok()) fail(env.error());
  o.lever_env = std::move(env).value();
  for (auto const& v : env_var_table()) o.other_env_vars.emplace_back(v.name);
  return o;
}

std::vector<std::string> arm_worker_args(BenchArgs const& a, std::string const& backend) {
  std::vector<std::string> out = {"bench",     "--arm-worker",
                                  "--backend", backend,
                                  "--repeats", std::to_string(a.repeats),
                                  "--warmup",  std::to_string(a.warmup),
                                  "--seed",    std::to_string(a.seed)};
  auto add = [&](char const* flag, std::string const& v) {
    if (!v.empty()) out.insert(out.end(), {flag, v});
  };
  add("--recipe", a.recipe);
  add("--problem", a.problem);
  add("--m", a.m_list);
  add("--routing", a.routing);
  if (a.same_device_tables) out.push_back("--same-device-tables");
  return out;
}

std::string own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string out;
  size_t start = 0;
  bool first = true;
  while (start < raw.size()) {
    size_t end = raw.find('\0', start);
    if (end == std::string::npos) end = raw.size();
    std::string arg = raw.substr(start, end - start);
    if (first) {
      arg = "moetune";
      first = false;
    }
    bool const quote =
        arg.find_first_of(" ,;|&") != std::string::npos && arg.find('\'') == std::string::npos;
    out += (out.empty() ? "" : " ") + (quote ? "'" + arg + "'" : arg);
    start = end + 1;
  }
  return out;
}

}  // namespace moetune::cli
