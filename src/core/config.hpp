// KernelConfig: how one GEMM of the MoE layer runs (tile, pipeline, launch), and MoeConfig, the
// pair of them that a table row holds. Problem and choice are kept apart (STYLE 9): nothing here
// knows M, K or E. Families may ignore knobs they do not have; can_implement (per backend) says
// which values a family accepts and why it rejects the rest.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"

namespace moetune::core {

/// Tile shape of one CTA (GPU) or one work item (CPU).
struct TileConfig {
  int block_m = 64;  ///< rows of tokens (token-expert pairs) per tile
  int block_n = 64;  ///< output columns per tile
  int block_k = 64;  ///< reduction depth per main-loop step
  int group_m =
      1;  ///< raster: tiles of this many M-blocks walk N before moving on (vLLM GROUP_SIZE_M)

  bool operator==(TileConfig const&) const = default;
};

/// Software pipeline and work split.
struct PipelineConfig {
  int num_warps = 4;   ///< warps per CTA (GPU); ignored by the cpu family
  int num_stages = 2;  ///< shared-memory stages in flight (GPU); ignored by the cpu family
  int split_k = 1;     ///< reduction split across CTAs/work items (1 = none)

  bool operator==(PipelineConfig const&) const = default;
};

/// Main-loop schedule. What each value means is the family's to say (sm90_gather: auto = mma.sync,
/// cooperative = cp.async + wgmma, tma_ws = TMA + warp-specialised persistent wgmma; see
/// docs/kernels.md). Tables name it by string, so values are only ever appended.
enum class Schedule { kAuto, kCooperative, kPingpong, kTmaWarpSpecialized };
std::string_view to_string(Schedule s);  ///< "auto", "cooperative", "pingpong", "tma_ws"
Result<Schedule> parse_schedule(std::string_view text);

/// Launch shape.
struct LaunchConfig {
  /// Compute (W x^T)^T: weights on the MMA's M side, tokens on N (sm90_gather: with schedule
  /// auto the tiny-M decode kernels, with tma_ws the mid-M swap-AB wgmma kernel).
  bool swap_ab = false;
  int cluster_m = 1;  ///< CTA cluster shape (Hopper), 1x1 = no cluster
  int cluster_n = 1;
  Schedule schedule = Schedule::kAuto;
  int num_threads = 0;  ///< cpu family: worker threads (0 = all hardware threads)

  bool operator==(LaunchConfig const&) const = default;
};

/// Everything that chooses how one GEMM runs.
struct KernelConfig {
  TileConfig tile;
  PipelineConfig pipeline;
  LaunchConfig launch;

  bool operator==(KernelConfig const&) const = default;
};

/// A table row: one KernelConfig per GEMM. GEMM1 = x @ w1^T (+ activation); GEMM2 = act @ w2^T
/// (+ routing weight and top-k combine). They share what the route/align step fixes: families
/// that pad tokens per expert to block_m need gemm1.tile.block_m == gemm2.tile.block_m, unless
/// the family walks the padded blocks in smaller GEMM1 tiles (sm90_gather: a tma_ws GEMM1 of 64
/// or 128 rows under a GEMM2 of 256).
struct MoeConfig {
  KernelConfig gemm1;
  KernelConfig gemm2;

  bool operator==(MoeConfig const&) const = default;
};

/// Both GEMMs set to the same config (how a vLLM row, which has one config, is read).
MoeConfig uniform_config(KernelConfig const& k);

/// Structural checks every family shares: every size >= 1, block_m and block_n powers of two in
/// [1, 512] (block_n may also be a multiple of 8 in [8, 512]), block_k a power of two in [1, 4096],
/// group_m >= 1, num_warps in {1,2,4,8,16}, num_stages in [1, 8], split_k in [1, 64],
/// cluster dims in {1,2,4}, num_threads >= 0. The error names the field and the allowed values.
Status validate(KernelConfig const& k, std::string_view where = "");
Status validate(MoeConfig const& c, std::string_view where = "");

/// "KernelConfig(tile=(64,64,64,g1), pipe=(w4,s2,sk1), launch=(swap_ab=0,cluster=1x1,auto,t0))".
std::string to_string(KernelConfig const& k);
/// "MoeConfig(gemm1=KernelConfig(...), gemm2=KernelConfig(...))", or one KernelConfig(...)
/// prefixed "uniform " when both are equal.
std::string to_string(MoeConfig const& c);
/// Short form for tables and logs: "m64n64k64g1w4s2" plus "sk2", "swap", "c2x1", "pp"/"co"/"tw",
/// "t8" only when not default; "gemm1|gemm2" when they differ.
std::string short_string(KernelConfig const& k);
std::string short_string(MoeConfig const& c);

}  // namespace moetune::core
