// Engine families and their files: which kernel families the engines run themselves (their own
// Triton fused_moe kernel), the file name each family's tables get, and the rule every row of an
// engine-format file must pass before moetune writes one.
//
// An engine reads a config file by exact name (vLLM's and SGLang's get_config_file_name), so the
// name decides who loads it. A table of an engine family gets exactly the engine's name, and every
// row must run in that engine's kernel; a table of one of our own families (cpu_tiled,
// sm90_gather, ...) gets ",family=<family>" before ".json", a name no engine asks for.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/config.hpp"
#include "core/result.hpp"
#include "core/table.hpp"

namespace moetune::core {

/// The largest shared memory a thread block may use on any GPU the engine family is tuned for
/// (sm_90: 227 KB); a row past it runs on none of them.
inline constexpr int64_t kEngineMaxSmemBytes = 232448;
/// Triton's largest num_warps (1024 threads a block).
inline constexpr int kEngineMaxWarps = 32;

/// True for a family the engines run themselves ("triton_vllm"), and for "" (a file of unknown
/// family is an engine's own file).
bool is_engine_family(std::string_view family);

/// The file name a table is stored under: vllm_file_name(key) for an engine family, else the
/// same with ",family=<family>" before ".json" ("E=8,N=128,device_name=cpu,family=cpu_tiled.json").
std::string table_file_name(TableKey const& key);

/// Shared memory the engine's Triton kernel needs at least for `k`: its software pipeline keeps
/// max(1, num_stages - 1) stages of the A (block_m x block_k) and B (block_k x block_n) tiles.
/// A lower bound (the exact figure depends on the arch), so a row past the limit surely fails.
int64_t engine_min_smem_bytes(KernelConfig const& k, TableKey const& key);

/// Checks one row against the engine kernel's limits, by rule: BLOCK_SIZE_M/N/K powers of two
/// >= 16 (tl.arange, tl.dot), GROUP_SIZE_M >= 1, num_warps a power of two <= kEngineMaxWarps,
/// num_stages >= 1, engine_min_smem_bytes <= kEngineMaxSmemBytes, and gemm2 == gemm1 (the engine
/// runs the file's one row for both GEMMs). The error names the row, the field, the value and
/// the rule: "E=..json: rows[1024]: BLOCK_SIZE_N = 232 is not a power of two >= 16 (Triton's
/// tl.arange); ...".
Status check_engine_row(TableKey const& key, int64_t m, MoeConfig const& config,
                        std::string const& file);

/// check_engine_row over every row; the first failure.
Status check_engine_rows(Table const& table, std::string const& file);

}  // namespace moetune::core
