// Options and printing shared by the subcommands: --backend, --problem, M, loading recipes and
// tables with CLI-level errors, and the text form of a table (show, tune).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/backend.hpp"
#include "core/problem.hpp"
#include "core/recipe.hpp"
#include "core/table.hpp"
#include "kernels/fast_paths.hpp"

namespace moetune::cli {

/// The default for --backend: $MOETUNE_BACKEND when set, else kernels::default_backend_name()
/// (kernels/backend_choice.hpp); CliExit(2) when the variable names no backend.
std::string default_backend();

/// Adds `--backend cuda|cpu` to `app`, writing into *backend (left empty when not given, so a
/// command can tell "chosen" from "default").
void add_backend_option(CLI::App& app, std::string* backend);
/// Checks a backend name: "cpu", "cuda" or "triton"; otherwise CliExit(2) with "did you mean".
void check_backend_name(std::string const& name, std::string const& where);
/// make_backend(name), or CliExit(2) with the reason (e.g. no GPU).
std::unique_ptr<core::Backend> backend_or_exit(std::string const& name);

/// The fast paths (levers) a process on `backend` takes under this environment: the built-in
/// lever table resolved at deployment backend/arch, tp 1, ep 1, bf16, role prefill, with
/// MOETUNE_LEVER_<NAME> knobs applied. A bad MOETUNE_* variable ends the command (exit 2).
kernels::FastPaths fast_paths_from_env_or_exit(std::string const& backend);
/// The names of the environment-variable table (env_var_table): the MOETUNE_* variables that are
/// not levers.
std::vector<std::string> env_var_names();

/// Adds `--problem SPEC` (core::parse_problem_spec form) to `app`.
void add_problem_option(CLI::App& app, std::string* spec);
/// Parses --problem, or CliExit(2) naming the option.
core::MoeProblem parse_problem_or_exit(std::string const& spec);

/// Checks a token count given on the command line: 0 <= M <= kMaxTokens, else CliExit(2).
void check_m(int64_t m, std::string const& option);

/// CLI11 check for an integer option: plain decimal digits with an optional '-' ("16", "-3").
/// CLI11 alone reads "0x10" as 16, "0o7" as 7 and "" as 0.
CLI::Validator decimal_integer();
/// CLI11 check for a number option: finite and in [lo, hi] (or (lo, hi] when !lo_inclusive).
/// CLI11's own Range lets "nan" through (every comparison with it is false).
CLI::Validator finite_number(double lo, double hi, bool lo_inclusive = true);
/// CLI11 check for a MOETUNE_DEV_NVRTC_DEFINES value (core::parse_dev_defines), so a bad token is
/// refused at the option, not at the first compile.
CLI::Validator dev_defines();

/// `--tables DIR` given on the command line must be a directory: CliExit(2) naming it, so a typo
/// is not served as "no tables" (the library treats a missing dir as none, for engines).
void check_tables_dir(std::string const& dir, std::string const& option);

core::Recipe load_recipe_or_exit(std::string const& path);
core::Table load_table_or_exit(std::string const& path);

/// The problem a table's key describes (M = m), for the backend's default config. CliExit(2) when
/// the key lacks a size the default needs (a plain vLLM file) and no --problem was given.
core::MoeProblem problem_from_key(core::TableKey const& key, int64_t m, std::string const& file);

/// The backend name for a kernel family: "cpu_tiled" -> "cpu", "triton_vllm" -> "triton",
/// everything else -> "cuda".
std::string backend_for_family(std::string const& family);
/// The backend that serves a table's family (its default config), or CliExit(2) naming the file,
/// the family and why that backend is unavailable here.
std::unique_ptr<core::Backend> backend_for_table(core::TableKey const& key,
                                                 std::string const& file);

/// The engine fields of a row that moetune does not model and the launch fields it leaves out, as
/// show and resolve print them: "kpack=2 waves_per_eu=0; num_warps absent (Triton's default 4)";
/// "" when there are none.
std::string format_engine_fields(std::map<std::string, std::string> const& fields,
                                 std::vector<std::string> const& absent);

/// Human-readable table: key line, policy, then one line per row in file order (bucket, config,
/// source, engine fields).
std::string format_table_text(core::Table const& table, std::string const& path);

/// "3.21" style fixed formatting for microseconds.
std::string format_us(double us);

}  // namespace moetune::cli
