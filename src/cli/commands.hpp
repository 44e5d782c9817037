// The moetune CLI: one table of subcommands (STYLE 18). Each subcommand lives in cmd_<name>.cpp
// and registers its options and callback on a CLI11 sub-app. Exit codes (documented in README):
//   0 ok, 1 findings / failed check / all candidates failed, 2 bad input or usage, 3 internal
//   error.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "core/result.hpp"

namespace moetune::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFindings = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;

/// Thrown by a command to end with one line on stderr and an exit code.
struct CliExit {
  int code = kExitOk;
  std::string message;  ///< printed to stderr as "moetune <cmd>: message" when non-empty
};

/// Exit code for a core error: kInternal -> 3, everything else (bad input, missing file, parse,
/// mismatch, version) -> 2.
int exit_code_for(core::Error const& e);
/// Throws CliExit for a failed Status/Result.
[[noreturn]] void fail(core::Error const& e);
template <class T>
T unwrap(core::Result<T> r) {
  if (!r.ok()) fail(r.error());
  return std::move(r).value();
}
inline void unwrap(core::Status s) {
  if (!s.ok()) fail(s.error());
}

/// One entry of the subcommand table. `setup` adds options to `app` and sets its callback; the
/// callback stores its exit code in `exit_code` (or throws CliExit).
struct CommandSpec {
  const char* name;
  const char* help;
  void (*setup)(CLI::App& app, int& exit_code);
  bool hidden = false;  ///< internal (the tuner's worker): left out of help and suggestions
};

/// The subcommand table, in help order.
std::vector<CommandSpec> const& command_table();

/// One entry of the environment-variable table (printed by `moetune --help` and docs).
struct EnvVarSpec {
  const char* name;
  const char* default_value;
  const char* help;
};
std::vector<EnvVarSpec> const& env_var_table();

// Subcommand setup functions (one per cmd_<name>.cpp).
void setup_tune(CLI::App& app, int& exit_code);
void setup_resolve(CLI::App& app, int& exit_code);
void setup_materialize(CLI::App& app, int& exit_code);
void setup_check(CLI::App& app, int& exit_code);
void setup_lint(CLI::App& app, int& exit_code);
void setup_show(CLI::App& app, int& exit_code);
void setup_defaults(CLI::App& app, int& exit_code);
void setup_worker(CLI::App& app, int& exit_code);
void setup_levers(CLI::App& app, int& exit_code);
void setup_run(CLI::App& app, int& exit_code);
void setup_prewarm(CLI::App& app, int& exit_code);
void setup_pack(CLI::App& app, int& exit_code);
void setup_bench(CLI::App& app, int& exit_code);
void setup_ab(CLI::App& app, int& exit_code);
void setup_report(CLI::App& app, int& exit_code);

}  // namespace moetune::cli
