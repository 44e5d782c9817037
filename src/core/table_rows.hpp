// One row of each of a table's two files: the vLLM file's row (the engines' six fields and any it
// passes through) and the manifest's row (both GEMMs' configs and the source). Shared by the
// whole-file readers (table_files.cpp) and the lookup that reads one row at a time
// (table_lookup.cpp). Sees the JSON library, so only core/*.cpp include it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/json_io.hpp"
#include "core/table.hpp"

namespace moetune::core {

/// vLLM's six row fields, in the order its sort_config writes them.
inline constexpr char const* kVllmFields[6] = {"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K",
                                               "GROUP_SIZE_M", "num_warps",    "num_stages"};
/// The C++ path of each of kVllmFields, for messages.
inline constexpr char const* kVllmFieldPaths[6] = {"tile.block_m",       "tile.block_n",
                                                   "tile.block_k",       "tile.group_m",
                                                   "pipeline.num_warps", "pipeline.num_stages"};
/// The field of `k` that kVllmFields[i] sets.
int* vllm_field(KernelConfig& k, int i);

/// Whether two configs agree on what a vLLM row holds: the six fields and split_k.
bool same_vllm_fields(KernelConfig a, KernelConfig b);

/// M from a row key as the engines read it (Python's int(key)): the whole key one integer, else
/// none. Range (M >= 1) is the caller's to check.
std::optional<int64_t> parse_row_key(std::string_view key);

/// One row of a vLLM file, the object under "M": BLOCK_SIZE_M/N/K and GROUP_SIZE_M required,
/// num_warps/num_stages defaulted (TableRow::absent_fields), SPLIT_K, other fields kept in
/// vllm_extra, a near miss of a known field an error with "did you mean". Both GEMMs get the
/// config. Errors name `at`.
Status parse_vllm_row(Json const& j, JsonAt const& at, TableRow* row);

/// A manifest row as read, before its source is complete: a row that names an entry of the
/// manifest's "sources" (version 2) holds only its own numbers and digest until attach_source.
struct ManifestRow {
  TableRow row;
  std::optional<int64_t> source_index;
};
/// One manifest row, {"config", "source"}: config required; source null, a whole Source, or
/// {"index", "numbers", "digest"} naming an entry of "sources". Errors name `at` and the field.
Status parse_manifest_row(Json const& j, JsonAt const& at, ManifestRow* out);
/// A manifest's "sources" (version 2): Source objects without numbers and digest, which each
/// row keeps for itself.
Status parse_manifest_sources(Json const& j, JsonAt const& at, std::vector<Source>* out);
/// Completes a row read with a source index: its source becomes sources[index] with the row's
/// own numbers and digest. An index outside `sources` is an error at `at` (the row) naming it.
Status attach_source(ManifestRow* row, std::vector<Source> const& sources, JsonAt const& at);

/// The fields of `s` a version 2 manifest writes once under "sources" (all but numbers and
/// digest), in to_json(Source)'s order.
Json shared_source_json(Source const& s);
/// A row's "source" in a version 2 manifest: {"index": index} plus numbers and digest when set.
Json row_source_json(Source const& s, size_t index);

}  // namespace moetune::core
