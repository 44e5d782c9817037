// moetune levers: list | show NAME | resolve --deployment KEY=VAL,... | diff A B. The table is the
// built-in one (levers/levers.json at build time) unless --table names a file; diff takes two
// files, either of which may be the word "builtin". See core/lever*.hpp and docs/levers.md.
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "core/lever.hpp"
#include "core/lever_docs.hpp"
#include "core/lever_io.hpp"
#include "core/lever_resolve.hpp"
#include "core/names.hpp"

extern char** environ;

namespace moetune::cli {
namespace {

constexpr char kBuiltin[] = "builtin";

struct LeversArgs {
  std::string table = kBuiltin;
  bool markdown = false;
  bool json = false;
  std::string name;
  std::string deployment;
  std::string a;
  std::string b;
  std::string deployments = "all";
};

core::LeverTable table_or_exit(std::string const& path) {
  if (path == kBuiltin) return unwrap(core::builtin_lever_table());
  return unwrap(core::load_lever_table(path));
}

/// The project's non-lever MOETUNE_* variables: the CLI env table (one list, STYLE 18).
std::vector<std::string> other_vars() {
  std::vector<std::string> out;
  for (auto const& v : env_var_table()) out.emplace_back(v.name);
  return out;
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.resize(width, ' ');
  return s;
}

void run_list(LeversArgs const& args) {
  core::LeverTable const t = table_or_exit(args.table);
  if (args.markdown) {
    std::cout << core::lever_markdown(t);
    return;
  }
  if (args.json) {
    std::cout << core::to_json_text(t);
    return;
  }
  for (auto const& l : t.levers) {
    std::cout << pad(l.name, 22) << pad(std::string(core::to_string(l.lever_class)), 12)
              << "served where " << core::to_string(l.served_at) << "; on by default where "
              << core::to_string(l.default_on) << "\n";
  }
  for (auto const& r : t.retired) {
    std::cout << pad(r.name, 22) << "retired: use " << core::knob_name(r.replacement) << "\n";
  }
}

void run_show(LeversArgs const& args) {
  core::LeverTable const t = table_or_exit(args.table);
  core::Lever const* l = t.find(args.name);
  if (l == nullptr) {
    std::vector<std::string> names;
    for (auto const& x : t.levers) names.push_back(x.name);
    std::string list;
    for (auto const& n : names) list += (list.empty() ? "" : ", ") + n;
    throw CliExit{kExitBadInput, "no lever '" + args.name + "' in " + args.table +
                                     "; expected one of " + list +
                                     core::did_you_mean(args.name, names)};
  }
  std::cout << l->name << " (" << core::to_string(l->lever_class) << ")\n"
            << "  " << l->description << "\n"
            << "  knob: " << core::knob_name(l->name) << "=on|off\n"
            << "  served where: " << core::to_string(l->served_at) << "\n"
            << "  on by default where: " << core::to_string(l->default_on) << "\n";
  for (auto const* list : {&l->depends_on, &l->exclusive_with}) {
    std::string text;
    for (auto const& n : *list) text += (text.empty() ? "" : ", ") + n;
    std::cout << (list == &l->depends_on ? "  depends on: " : "  exclusive with: ")
              << (text.empty() ? "nothing" : text) << "\n";
  }
  std::cout << "  evidence (" << l->evidence.runs_on << "): " << l->evidence.check << "\n"
            << "    " << l->evidence.claim << "\n"
            << "    result: "
            << (l->evidence.result.empty() ? "not yet reported" : l->evidence.result) << "\n";
  for (auto const& d : t.deployments) {
    auto r = core::resolve_levers(t, d, {}, {});
    std::cout << "  at " << core::to_string(d) << ": ";
    if (!r.ok()) {
      std::cout << "error: " << r.error().to_string() << "\n";
      continue;
    }
    auto const* rl = r->find(l->name);
    std::cout << (rl->on ? "on" : "off") << " (" << rl->rule << ")\n";
  }
}

void run_resolve(LeversArgs const& args) {
  // One snapshot of the environment, taken before anything else reads it.
  core::EnvSnapshot const env = core::snapshot_environment(environ);
  core::Deployment const d = unwrap(core::parse_deployment(args.deployment, "--deployment"));
  core::LeverTable const t = table_or_exit(args.table);
  core::LeverResolution const r = unwrap(core::resolve_levers(t, d, env, other_vars()));
  if (args.json) {
    std::cout << core::to_json_text(r);
    return;
  }
  std::cout << "deployment " << core::to_string(d) << "\n";
  for (auto const& l : r.levers) {
    std::cout << "  " << (l.on ? "on   " : "off  ") << pad(l.name, 22) << l.rule << "\n";
  }
  std::string on;
  for (auto const& n : r.on_names()) on += (on.empty() ? "" : ", ") + n;
  std::cout << "fast paths: " << (on.empty() ? "none" : on) << "\n";
}

std::vector<core::Deployment> diff_deployments(LeversArgs const& args, core::LeverTable const& a,
                                               core::LeverTable const& b) {
  std::vector<core::Deployment> out;
  auto add = [&](core::Deployment const& d) {
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  if (args.deployments == "all") {
    for (auto const& d : a.deployments) add(d);
    for (auto const& d : b.deployments) add(d);
  } else {
    std::string_view rest = args.deployments;
    for (size_t i = 0; !rest.empty(); ++i) {
      size_t const semi = std::min(rest.find(';'), rest.size());
      add(unwrap(core::parse_deployment(rest.substr(0, semi),
                                        "--deployments[" + std::to_string(i) + "]")));
      rest = semi < rest.size() ? rest.substr(semi + 1) : std::string_view{};
    }
  }
  if (out.empty()) {
    throw CliExit{kExitBadInput, "--deployments: no deployment to compare (" + args.a + " and " +
                                     args.b + " declare none); give --deployments K=V,...;K=V,..."};
  }
  return out;
}

/// "x, y" of the names in `a` that `b` lacks.
std::string missing_from(std::vector<std::string> const& a, std::vector<std::string> const& b) {
  std::string out;
  for (auto const& n : a) {
    if (std::find(b.begin(), b.end(), n) == b.end()) out += (out.empty() ? "" : ", ") + n;
  }
  return out;
}

int run_diff(LeversArgs const& args) {
  core::LeverTable const a = table_or_exit(args.a);
  core::LeverTable const b = table_or_exit(args.b);
  std::vector<core::Deployment> const matrix = diff_deployments(args, a, b);
  int differing = 0;
  for (auto const& d : matrix) {
    // An empty environment: the verifier compares what each table does with nothing set.
    auto ra = core::resolve_levers(a, d, {}, {});
    auto rb = core::resolve_levers(b, d, {}, {});
    std::string line;
    if (!ra.ok() || !rb.ok()) {
      if (!ra.ok()) line += "A fails: " + ra.error().to_string();
      if (!rb.ok())
        line += std::string(line.empty() ? "" : "; ") + "B fails: " + rb.error().to_string();
    } else if (ra->on_names() != rb->on_names()) {
      std::string const only_a = missing_from(ra->on_names(), rb->on_names());
      std::string const only_b = missing_from(rb->on_names(), ra->on_names());
      line = "only in A: " + (only_a.empty() ? "-" : only_a) +
             "; only in B: " + (only_b.empty() ? "-" : only_b);
    }
    if (!line.empty()) {
      ++differing;
      std::cout << core::to_string(d) << ": " << line << "\n";
    }
  }
  std::cout << differing << " of " << matrix.size() << " deployments differ"
            << (differing == 0 ? ": identical fast-path sets with an empty environment" : "")
            << " (A = " << args.a << ", B = " << args.b << ")\n";
  return differing == 0 ? kExitOk : kExitFindings;
}

void add_table_option(CLI::App& sub, LeversArgs& args) {
  sub.add_option("--table", args.table,
                 "lever table file (default: builtin, levers/levers.json at build time)");
}

}  // namespace

void setup_levers(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<LeversArgs>();
  app.require_subcommand(1);
  CLI::App* list = app.add_subcommand("list", "list the levers (--markdown: docs/levers.md)");
  add_table_option(*list, *args);
  auto* md = list->add_flag("--markdown", args->markdown, "print docs/levers.md");
  list->add_flag("--json", args->json, "print the table as a lever table file")->excludes(md);
  list->callback([args, &exit_code] {
    run_list(*args);
    exit_code = kExitOk;
  });

  CLI::App* show = app.add_subcommand("show", "one lever: rules, evidence, and where it is on");
  show->add_option("name", args->name, "lever name")->required();
  add_table_option(*show, *args);
  show->callback([args, &exit_code] {
    run_show(*args);
    exit_code = kExitOk;
  });

  CLI::App* resolve =
      app.add_subcommand("resolve", "the fast-path set at a deployment under this environment");
  resolve
      ->add_option("--deployment", args->deployment,
                   "backend=cuda,arch=sm90,tp=8,ep=8,dtype=bf16,role=decode (every key)")
      ->required();
  add_table_option(*resolve, *args);
  resolve->add_flag("--json", args->json, "print the resolution as one JSON object");
  resolve->callback([args, &exit_code] {
    run_resolve(*args);
    exit_code = kExitOk;
  });

  CLI::App* diff = app.add_subcommand(
      "diff", "deployments whose fast-path sets differ between two tables (empty environment)");
  diff->add_option("a", args->a, "lever table file, or 'builtin'")->required();
  diff->add_option("b", args->b, "lever table file, or 'builtin'")->required();
  diff->add_option("--deployments", args->deployments,
                   "'all' (both tables' matrices) or K=V,...;K=V,...");
  diff->callback([args, &exit_code] { exit_code = run_diff(*args); });
}

}  // namespace moetune::cli
