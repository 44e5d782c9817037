// moetune: the command-line entry point. Subcommands come from command_table(); every error ends
// as one line on stderr with a documented exit code (commands.hpp).
#include <iostream>
#include <string_view>

#include "cli/commands.hpp"
#include "core/names.hpp"

namespace moetune::cli {

std::vector<CommandSpec> const& command_table() {
  static const std::vector<CommandSpec> table = {
      {"tune", "tune a recipe's buckets on a backend and write its tables", setup_tune},
      {"resolve", "explain which row a table serves for a token count M", setup_resolve},
      {"materialize", "write a recipe's pinned rows into tables (no GPU)", setup_materialize},
      {"check", "regenerate a recipe's tables and diff them with what ships", setup_check},
      {"lint", "find stale, unreachable or mismatched rows in tables", setup_lint},
      {"show", "print a table (rows, configs, sources)", setup_show},
      {"defaults", "print the config a backend's default rule gives a problem at each M",
       setup_defaults},
      {"worker", "internal: the tuner's device process (tuner/worker.hpp)", setup_worker, true},
      {"levers", "list, show, resolve and diff the kernel fast-path levers", setup_levers},
      {"run", "serve one layer call through MoeRunner and say which rule chose the config",
       setup_run},
      {"prewarm", "compile or validate every config the tables name, before serving",
       setup_prewarm},
      {"pack", "write a deployable bundle: tables, cubins, manifest", setup_pack},
      {"bench", "measure a sweep of token counts: median, CI, floor, digests, archive",
       setup_bench},
      {"ab", "compare arms (tables, levers, binaries) in fresh interleaved processes", setup_ab},
      {"report", "render a bench/ab folder or a bench CSV as one HTML page", setup_report},
  };
  return table;
}

std::vector<EnvVarSpec> const& env_var_table() {
  static const std::vector<EnvVarSpec> table = {
      {"MOETUNE_BACKEND", "cuda if a GPU is present, else cpu",
       "default for --backend on every command that runs kernels"},
      {"MOETUNE_CACHE_DIR", "$XDG_CACHE_HOME/moetune or ~/.cache/moetune",
       "where compiled kernels (cubins) are cached"},
      {"MOETUNE_CACHE", "$XDG_CACHE_HOME/moetune/knobs-<role>.json or ~/.cache/moetune/...",
       "the knob cache file of MoeRunner and `moetune run` (--cache wins)"},
      {"MOETUNE_LEVER_<NAME>", "the lever's default rule at the deployment",
       "on|off: force one fast path (moetune levers list; docs/levers.md)"},
      {"MOETUNE_DEV_NVRTC_DEFINES", "unset",
       "developers: NAME[=VALUE] ... as -D options of every NVRTC compile (kernel source "
       "variants, e.g. MOETUNE_TMA_WEIGHT_L2=1; part of the cubin cache key)"},
      {"MOETUNE_TEST_SEED", "20240611", "tests: seed of the generated cpu kernel cases"},
      {"MOETUNE_BUILD_DIR", "build", "scripts: the build directory"},
      {"MOETUNE_CUDA", "ON when nvcc is found", "scripts/build.sh: OFF builds without CUDA"},
      {"MOETUNE_JOBS", "$(nproc)", "scripts/build.sh: parallel build jobs"},
      {"MOETUNE_DEMO_OUT", "build/demo-tables", "scripts/demo.sh: where the demo writes tables"},
      {"MOETUNE_DEMO_RECIPE",
       "recipes/demo.json (on a Hopper GPU, recipes/demo-h200.json for the GPU present)",
       "scripts/demo.sh: the recipe the demo tunes"},
      {"MOETUNE_CI_FORMAT", "unset (report)", "ci: strict fails on clang-format drift"},
      {"MOETUNE_TABLES", "the Python package's shipped tables",
       "python: the tables root the torch ops serve from (<root>/<device>/)"},
      {"MOETUNE_PYTHON", "ON when torch is importable",
       "scripts: OFF builds and tests without the Python package"},
      {"MOETUNE_TORCH_VERSION", "2.11.0", "scripts/setup.sh: the torch it pip-installs"},
      {"MOETUNE_DEVICE_NAME", "the device present (cpu on the cpu backend)",
       "tests/CI: the device name tune checks recipes against and names tables for, and "
       "tables are matched against (e.g. NVIDIA_H200)"},
      {"MOETUNE_TABLES_SAME_DEVICE", "0 (a table of another device serves: rule other_device)",
       "1: bench, ab, run, MoeRunner and the torch ops use no table made on another device"},
  };
  return table;
}

int exit_code_for(core::Error const& e) {
  return e.code == core::ErrorCode::kInternal ? kExitInternal : kExitBadInput;
}

void fail(core::Error const& e) { throw CliExit{exit_code_for(e), e.to_string()}; }

}  // namespace moetune::cli

namespace {

/// An unknown first word is a mistyped subcommand: one line with "did you mean" (ninja), rather
/// than CLI11's "arguments were not expected".
bool reject_unknown_subcommand(int argc, char** argv) {
  using namespace moetune::cli;
  if (argc < 2 || argv[1][0] == '-') return false;
  std::vector<std::string> names;
  for (auto const& cmd : command_table()) {
    if (std::string_view(argv[1]) == cmd.name) return false;
    if (!cmd.hidden) names.push_back(cmd.name);
  }
  std::string list;
  for (auto const& n : names) list += (list.empty() ? "" : ", ") + n;
  std::cerr << "moetune: unknown subcommand '" << moetune::core::clip(argv[1])
            << "'; expected one of " << list << moetune::core::did_you_mean(argv[1], names) << "\n";
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace moetune::cli;
  if (reject_unknown_subcommand(argc, argv)) return kExitBadInput;
  CLI::App app{"moetune: tune, resolve and serve fused-MoE kernel configs"};
  app.require_subcommand(1);
  std::string footer = "\nEnvironment:\n";
  for (auto const& v : env_var_table()) {
    footer += std::string("  ") + v.name + " (default: " + v.default_value + "): " + v.help + "\n";
  }
  footer +=
      "\nExit codes: 0 ok, 1 findings or failed check, 2 bad input or usage, 3 internal error.";
  app.footer(footer);
  int exit_code = kExitOk;
  std::string current = "";
  for (auto const& cmd : command_table()) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.help);
    if (cmd.hidden) sub->group("");
    cmd.setup(*sub, exit_code);
  }
  try {
    app.parse(argc, argv);
  } catch (CLI::CallForHelp const& e) {
    return app.exit(e);
  } catch (CLI::CallForAllHelp const& e) {
    return app.exit(e);
  } catch (CLI::ParseError const& e) {
    std::string sub = argc > 1 ? argv[1] : "";
    std::cerr << "moetune" << (sub.empty() || sub[0] == '-' ? "" : " " + sub) << ": "
              << moetune::core::clip_middle(e.what()) << "; see 'moetune "
              << (sub.empty() || sub[0] == '-' ? "" : sub + " ") << "--help'\n";
    return kExitBadInput;
  } catch (CliExit const& e) {
    if (!e.message.empty()) {
      // Every message is one line of reasonable length, whatever the arguments echoed in it.
      std::cerr << "moetune " << (argc > 1 ? argv[1] : "") << ": "
                << moetune::core::clip_middle(e.message) << "\n";
    }
    return e.code;
  } catch (std::exception const& e) {
    std::cerr << "moetune " << (argc > 1 ? argv[1] : "")
              << ": internal error: " << moetune::core::clip_middle(e.what()) << "\n";
    return kExitInternal;
  }
  return exit_code;
}
