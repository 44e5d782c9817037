// Table: bucket M -> row, as in a vLLM fused-MoE config file, plus the key and provenance that
// the engines' file lacks. On disk a table is two files in one directory:
//   E=128,N=768,device_name=NVIDIA_H200,family=sm90_gather.json            the rows
//   E=128,N=768,device_name=NVIDIA_H200,family=sm90_gather.json.moetune    the manifest (JSON):
//       full TableKey, policy, both GEMMs' configs per row, and per row Source (the fields one
//       run shares written once under "sources")
// The file name comes from core/engine_rows.hpp (table_file_name): our own families carry
// ",family=..", so no engine loads them; an engine family's table has exactly the engine's name.
// The rows file holds each row's GEMM1 config in the engines' six fields; an engine never sees
// the manifest (its name does not end in .json). A table with no manifest (any vLLM/SGLang file)
// loads with both GEMMs set to the file's row and no key fields beyond the name.
// load_table reads every row; core/table_lookup.hpp reads the one row a lookup serves.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/file_transaction.hpp"
#include "core/problem.hpp"
#include "core/result.hpp"
#include "core/source.hpp"

namespace moetune::core {

/// Format version of the manifest; readers accept [kOldestManifestVersion, kManifestVersion].
/// Version 2 added "sources" (a source's shared fields written once) and writes no indentation.
inline constexpr int kManifestVersion = 2;
inline constexpr int kOldestManifestVersion = 1;

/// The full key of a table. The vLLM file name is derived from (E, N, device, dtype, block_shape);
/// the rest lives in the manifest and must match the problem a table is used for.
struct TableKey {
  int64_t num_experts = 0;               ///< E
  int64_t intermediate_size = 0;         ///< N in vLLM's name = I
  int64_t hidden_size = 0;               ///< K (0 = unknown: a plain vLLM file)
  int64_t top_k = 0;                     ///< 0 = unknown
  std::optional<Activation> activation;  ///< unknown for a plain vLLM file
  DType dtype = DType::kBf16;
  std::string dtype_tag;  ///< vLLM's dtype suffix ("fp8_w8a8", ...); "" for bf16/fp16
  std::optional<std::pair<int, int>> block_shape;  ///< vLLM's block_shape=[bn,bk]
  std::string device_name;                         ///< as in the file name: spaces replaced by '_'
  std::string family;      ///< kernel family ("cpu_tiled", "sm90_gather"); "" = unknown
  int family_version = 0;  ///< 0 = unknown
  std::string toolchain;   ///< "nvcc 13.0" / "g++ 12.2"; "" = unknown

  bool operator==(TableKey const&) const = default;
};

/// vLLM's file name: "E={E},N={N},device_name={dev}[,dtype={tag}][,block_shape=[bn,bk]].json".
std::string vllm_file_name(TableKey const& key);
/// Parses a vLLM file name (no directory) into the key fields it holds; also reads the
/// ",family=<family>" item of our own families' names (core/engine_rows.hpp, table_file_name).
Result<TableKey> parse_vllm_file_name(std::string_view file_name);
/// Device name as vLLM spells it in file names: spaces -> '_' (and, as a Python str could not hold
/// them, bytes that are not UTF-8, control bytes and '/' -> '_'); any name whose '_'-separated
/// tokens contain "H200" becomes "NVIDIA_H200" (vLLM's H200-family rule).
std::string vllm_device_name(std::string_view device_name);

/// Checks that a table made for `key` may serve `problem` on `device_name`: E, I, and, where the
/// key knows them, K, top_k, activation, dtype. The error names the first field that differs with
/// both values, e.g. "table E=128,N=768,...: hidden_size (K) is 4096 in the table but 2048 in the
/// problem; use a table tuned for K=2048 or run `moetune tune`".
Status check_key_matches(TableKey const& key, MoeProblem const& problem,
                         std::string_view table_name);

/// Resolver policies; both off by default (vLLM parity).
struct ResolverPolicy {
  std::optional<int64_t> tiny_m_threshold;    ///< M <= t -> the backend's default config
  std::optional<double> beyond_range_factor;  ///< M > f * largest key -> default config

  bool operator==(ResolverPolicy const&) const = default;
};

/// One row: the config both GEMMs run with, and where it came from.
struct TableRow {
  MoeConfig config;
  std::optional<Source> source;  ///< none for a plain vLLM file
  /// Per-row fields of the engine file that moetune does not model (ROCm's waves_per_eu,
  /// matrix_instr_nonkdim, kpack; SGLang's USE_TMA; Intel's grf_mode; num_ctas; any other field
  /// an engine passes on to its kernel), value as JSON text, shown and written back verbatim.
  std::map<std::string, std::string> vllm_extra;
  /// Launch fields the engine file's row leaves out ("num_warps", "num_stages"), in that order.
  /// The engines then launch with Triton's defaults, which `config` holds (kTritonDefaultWarps,
  /// kTritonDefaultStages); the file is written back without them.
  std::vector<std::string> absent_fields;

  bool operator==(TableRow const&) const = default;
};

/// A table: key, policy and rows by bucket M.
struct Table {
  TableKey key;
  ResolverPolicy policy;
  std::map<int64_t, TableRow> rows;  ///< bucket M -> row, ascending
  /// Row keys in the order the engine file lists them, kept only when that order is not
  /// ascending (empty = ascending). The engines' lookup breaks ties by file order, so this is part
  /// of what a table means; keys_in_file_order() is the order to read and write.
  std::vector<int64_t> key_order;
  bool has_manifest = false;                 ///< false for a plain vLLM file
  std::map<std::string, std::string> extra;  ///< top-level keys vLLM writes that we keep verbatim
                                             ///< (e.g. "triton_version"), value as JSON text

  bool operator==(Table const&) const = default;
};

/// Triton's launch defaults, which the engines' kernel runs with when a row leaves the field out.
inline constexpr int kTritonDefaultWarps = 4;
inline constexpr int kTritonDefaultStages = 3;

/// The table's row keys in file order: key_order's keys that have rows, then any other row keys
/// ascending (rows added after loading). The engines' `min(keys, key=|key - M|)` walks this order.
std::vector<int64_t> keys_in_file_order(Table const& table);

/// Loads a table from a vLLM file path; reads the manifest beside it when present. vLLM's extra
/// keys (triton_version, SPLIT_K, ROCm keys) are tolerated. Errors name the file and, for JSON,
/// the line or the field.
Result<Table> load_table(std::string const& path);
/// Writes the vLLM file and the manifest into `dir` as a pair (stage_table, then commit): both
/// temps are written before either file changes, and the two renames run under the directory's
/// lock, so concurrent writers never mix their pairs and a failure changes neither file. (A kill
/// between the two renames can still tear a pair; load_table names that, and the command that
/// regenerates it.) Returns the vLLM file's path.
Result<std::string> save_table(Table const& table, std::string const& dir);
/// Stages a table's two files into `tx`: the manifest (or, for a plain table, the removal of a
/// stale one) and the rows file, named by table_file_name. Nothing changes on disk until
/// tx.commit(). Returns the rows file's path. Several tables staged into one transaction change
/// all-or-nothing. A table of an engine family (triton_vllm) gets the engine's exact name, so it
/// is staged only when check_engine_rows passes; else that error (kUnsupported) and nothing.
Result<std::string> stage_table(Table const& table, std::string const& dir, FileTransaction& tx);
/// Lists the vLLM table files (*.json, not *.moetune) in dir, sorted, as paths "dir/name".
/// A missing dir is kNotFound.
Result<std::vector<std::string>> list_table_files(std::string const& dir);

// ---- the two files, separately (load_table/save_table compose these; lint reads them apart) ----

/// "<vllm path>.moetune": where the manifest of a vLLM file lives.
std::string manifest_path(std::string const& vllm_path);

/// Parses a vLLM/SGLang config file as the engines read it. Top-level keys that are integers are
/// rows (keys are M as strings, the engines' int(key)), kept in file order (Table::key_order);
/// other keys with non-object values go to Table::extra (triton_version). Row fields:
/// BLOCK_SIZE_M/N/K and GROUP_SIZE_M (required: the kernel's parameters), num_warps and
/// num_stages (Triton's defaults when absent, see TableRow::absent_fields), SPLIT_K
/// (-> pipeline.split_k); any other field goes to vllm_extra unchanged, except one that is a near
/// miss of a known field ("BLOCK_SIZE_MM"), an error with "did you mean". Both GEMMs get the
/// row's config; no sources. `file` is used for messages and, when its base name parses, for the
/// key.
Result<Table> parse_vllm_table(std::string_view text, std::string const& file);
/// vLLM's save_configs layout: 4-space indent, Table::extra first (sorted), then rows in file
/// order (keys_in_file_order: ascending for a table moetune made), each row's six fields in
/// vLLM's order less absent_fields (+ SPLIT_K when != 1, + vllm_extra), newline at end.
std::string format_vllm_table(Table const& table);

/// The manifest as JSON text, version 2: {"manifest_version", "key", "policy", "sources",
/// "rows": {"M": {"config", "source"}}}, one line per source and per row. Each row holds both
/// GEMMs' full configs and its source as {"index" into "sources", "numbers", "digest"} (or
/// null); "sources" holds each distinct rest of a source (kind, date, device, protocol, command).
std::string format_manifest(Table const& table);
/// Parses a manifest of version 1 (no "sources"; each row's source whole) or 2 (strict; a
/// version outside [kOldestManifestVersion, kManifestVersion] is kVersion naming the file). A
/// row's source may be null, a whole Source, or {"index", "numbers", "digest"}. The result has
/// has_manifest = true and no extra.
Result<Table> parse_manifest(std::string_view text, std::string const& file);
/// Every disagreement between a manifest and the vLLM file it sits beside (`vllm_file_name` is
/// the vLLM file's base name), as kMismatch errors with where = the manifest path, in order: key
/// vs file name, rows only in one file, then GEMM1 fields that differ, e.g.
/// "rows[16].config.gemm1.tile.block_n is 128 in the manifest but 64 in the vLLM file; ...".
std::vector<Error> manifest_mismatches(Table const& manifest, Table const& vllm,
                                       std::string const& vllm_file_name,
                                       std::string const& manifest_file);

}  // namespace moetune::core
