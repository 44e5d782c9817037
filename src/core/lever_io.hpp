// Lever table files: levers/levers.json is the one place the levers live; the build embeds it
// (cmake/embed_levers.cmake) so the binary needs no source tree. `moetune levers diff` reads two
// such files. Readers are strict (unknown fields get "did you mean") and check
// lever_table_version against [kOldestSupported, kSchemaVersion].
#pragma once

#include <string>
#include <string_view>

#include "core/lever.hpp"
#include "core/lever_resolve.hpp"
#include "core/result.hpp"

namespace moetune::core {

/// Path of the checked-in table, relative to the repository root.
inline constexpr char kLeverTablePath[] = "levers/levers.json";

/// Parses and validates a lever table. `file` names the origin in errors. Fails with kParse
/// (malformed text, unknown field, wrong type), kVersion (version outside the supported range;
/// the message names the version and how to regenerate) or kInvalidArgument (validate()).
Result<LeverTable> parse_lever_table_json(std::string_view text, std::string const& file);
/// Reads a lever table file; kNotFound when it does not exist, else as parse_lever_table_json.
Result<LeverTable> load_lever_table(std::string const& path);
/// The table as JSON text (2-space indent); parse_lever_table_json(print) == table.
std::string to_json_text(LeverTable const& table);

/// The table compiled into this binary (levers/levers.json at build time), parsed and validated
/// once. Fails only when the checked-in file is broken (tests catch that first).
Result<LeverTable> const& builtin_lever_table();
/// The raw embedded text (generated file).
std::string_view builtin_lever_table_text();

/// A resolution as JSON: {"deployment": {...}, "levers": [{name, on, decided_by, rule}]}.
std::string to_json_text(LeverResolution const& r, int indent = 2);

}  // namespace moetune::core
