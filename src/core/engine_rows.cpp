// Engine families, table file names, and the engine kernel's limits checked by rule.
#include "core/engine_rows.hpp"

#include <algorithm>
#include <bit>

namespace moetune::core {

bool is_engine_family(std::string_view family) { return family.empty() || family == "triton_vllm"; }

std::string table_file_name(TableKey const& key) {
  std::string name = vllm_file_name(key);
  if (is_engine_family(key.family)) return name;
  constexpr std::string_view kExt = ".json";
  return name.substr(0, name.size() - kExt.size()) + ",family=" + key.family + std::string(kExt);
}

int64_t engine_min_smem_bytes(KernelConfig const& k, TableKey const& key) {
  int64_t elem_bytes = 2;  // bf16, fp16
  if (key.dtype == DType::kFp32) elem_bytes = 4;
  if (key.dtype_tag.starts_with("fp8") || key.dtype_tag.starts_with("int8")) elem_bytes = 1;
  int64_t const stages = std::max(1, k.pipeline.num_stages - 1);
  return stages * (int64_t{k.tile.block_m} + k.tile.block_n) * k.tile.block_k * elem_bytes;
}

Status check_engine_row(TableKey const& key, int64_t m, MoeConfig const& config,
                        std::string const& file) {
  std::string const where = file + ": rows[" + std::to_string(m) + "]";
  auto bad = [&](std::string const& what, std::string const& rule) {
    return make_error(ErrorCode::kUnsupported, where,
                      what + " " + rule +
                          "; the engine's Triton kernel cannot run this row, so "
                          "no engine-format file is written: re-tune it within the family's space");
  };
  KernelConfig const& k = config.gemm1;
  struct Block {
    char const* name;
    int value;
  };
  for (Block const b :
       {Block{"BLOCK_SIZE_M", k.tile.block_m}, Block{"BLOCK_SIZE_N", k.tile.block_n},
        Block{"BLOCK_SIZE_K", k.tile.block_k}}) {
    if (b.value < 16 || !std::has_single_bit(static_cast<unsigned>(b.value))) {
      return bad(std::string(b.name) + " = " + std::to_string(b.value),
                 "is not a power of two >= 16 (Triton's tl.arange needs a power of two, tl.dot "
                 "at least 16)");
    }
  }
  if (k.tile.group_m < 1) {
    return bad("GROUP_SIZE_M = " + std::to_string(k.tile.group_m), "is below 1");
  }
  int const warps = k.pipeline.num_warps;
  if (warps < 1 || warps > kEngineMaxWarps || !std::has_single_bit(static_cast<unsigned>(warps))) {
    return bad("num_warps = " + std::to_string(warps),
               "is not one of Triton's 1, 2, 4, 8, 16, 32 (a power of two)");
  }
  if (k.pipeline.num_stages < 1) {
    return bad("num_stages = " + std::to_string(k.pipeline.num_stages), "is below 1");
  }
  if (int64_t const smem = engine_min_smem_bytes(k, key); smem > kEngineMaxSmemBytes) {
    return bad("shared memory >= " + std::to_string(smem) + " bytes",
               "is past the " + std::to_string(kEngineMaxSmemBytes) +
                   " a block may use (sm_90); use fewer stages or smaller tiles");
  }
  if (config.gemm2 != config.gemm1) {
    return bad("gemm2 " + to_string(config.gemm2),
               "differs from gemm1 " + to_string(config.gemm1) +
                   " (the engine runs the file's one row for both GEMMs)");
  }
  return Status::Ok();
}

Status check_engine_rows(Table const& table, std::string const& file) {
  for (auto const& [m, row] : table.rows) {
    MOETUNE_RETURN_IF_ERROR(check_engine_row(table.key, m, row.config, file));
  }
  return Status::Ok();
}

}  // namespace moetune::core
