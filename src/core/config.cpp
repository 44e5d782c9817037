#include "core/config.hpp"

#include <vector>

#include "core/names.hpp"

namespace moetune::core {

namespace {

std::string prefix(std::string_view where) {
  return where.empty() ? std::string() : std::string(where) + ".";
}

Error bad(std::string_view where, std::string const& field, int seen, std::string const& allowed) {
  return make_error(ErrorCode::kInvalidArgument, std::string(where),
                    field + " = " + std::to_string(seen) + " is not allowed; expected " + allowed);
}

bool is_pow2_in(int v, int lo, int hi) { return v >= lo && v <= hi && (v & (v - 1)) == 0; }

bool one_of(int v, std::initializer_list<int> allowed) {
  for (int a : allowed) {
    if (v == a) return true;
  }
  return false;
}

}  // namespace

std::string_view to_string(Schedule s) {
  switch (s) {
    case Schedule::kAuto: return "auto";
    case Schedule::kCooperative: return "cooperative";
    case Schedule::kPingpong: return "pingpong";
    case Schedule::kTmaWarpSpecialized: return "tma_ws";
  }
  return "auto";
}

Result<Schedule> parse_schedule(std::string_view text) {
  if (text == "auto") return Schedule::kAuto;
  if (text == "cooperative") return Schedule::kCooperative;
  if (text == "pingpong") return Schedule::kPingpong;
  if (text == "tma_ws") return Schedule::kTmaWarpSpecialized;
  return make_error(ErrorCode::kInvalidArgument, "schedule",
                    "unknown schedule '" + std::string(text) +
                        "'; expected one of auto, cooperative, pingpong, tma_ws" +
                        did_you_mean(text, {"auto", "cooperative", "pingpong", "tma_ws"}));
}

MoeConfig uniform_config(KernelConfig const& k) { return MoeConfig{.gemm1 = k, .gemm2 = k}; }

Status validate(KernelConfig const& k, std::string_view where) {
  // block_m may also be 192 (three 64-row warpgroups: cuda tma_ws), with 12 warps, or a multiple
  // of 16 up to 128 (cuda mma.sync: a block sized to an expert's pairs, e.g. 48).
  if (!is_pow2_in(k.tile.block_m, 1, 512) && k.tile.block_m != 192 &&
      !(k.tile.block_m % 16 == 0 && k.tile.block_m >= 16 && k.tile.block_m <= 128)) {
    return bad(where, "tile.block_m", k.tile.block_m,
               "a power of two in [1, 512], a multiple of 16 in [16, 128], or 192");
  }
  // block_n may also be any multiple of 8 (wgmma takes N in steps of 8: exact tiles for 1856).
  if (!is_pow2_in(k.tile.block_n, 1, 512) &&
      !(k.tile.block_n % 8 == 0 && k.tile.block_n >= 8 && k.tile.block_n <= 512)) {
    return bad(where, "tile.block_n", k.tile.block_n,
               "a power of two in [1, 512] or a multiple of 8 in [8, 512]");
  }
  // block_k up to 4096: the decode kernels step through K in up to 2048 elements per warp.
  if (!is_pow2_in(k.tile.block_k, 1, 4096)) {
    return bad(where, "tile.block_k", k.tile.block_k, "a power of two in [1, 4096]");
  }
  if (k.tile.group_m < 1) return bad(where, "tile.group_m", k.tile.group_m, ">= 1");
  if (!one_of(k.pipeline.num_warps, {1, 2, 4, 8, 12, 16})) {
    return bad(where, "pipeline.num_warps", k.pipeline.num_warps, "one of 1, 2, 4, 8, 12, 16");
  }
  if (k.pipeline.num_stages < 1 || k.pipeline.num_stages > 8) {
    return bad(where, "pipeline.num_stages", k.pipeline.num_stages, "an integer in [1, 8]");
  }
  if (k.pipeline.split_k < 1 || k.pipeline.split_k > 64) {
    return bad(where, "pipeline.split_k", k.pipeline.split_k, "an integer in [1, 64]");
  }
  if (!one_of(k.launch.cluster_m, {1, 2, 4})) {
    return bad(where, "launch.cluster_m", k.launch.cluster_m, "one of 1, 2, 4");
  }
  if (!one_of(k.launch.cluster_n, {1, 2, 4})) {
    return bad(where, "launch.cluster_n", k.launch.cluster_n, "one of 1, 2, 4");
  }
  if (k.launch.num_threads < 0) {
    return bad(where, "launch.num_threads", k.launch.num_threads, ">= 0 (0 = all threads)");
  }
  return Status::Ok();
}

Status validate(MoeConfig const& c, std::string_view where) {
  std::string const p = prefix(where);
  MOETUNE_RETURN_IF_ERROR(validate(c.gemm1, p + "gemm1"));
  MOETUNE_RETURN_IF_ERROR(validate(c.gemm2, p + "gemm2"));
  return Status::Ok();
}

std::string to_string(KernelConfig const& k) {
  auto const& t = k.tile;
  auto const& p = k.pipeline;
  auto const& l = k.launch;
  return "KernelConfig(tile=(" + std::to_string(t.block_m) + "," + std::to_string(t.block_n) + "," +
         std::to_string(t.block_k) + ",g" + std::to_string(t.group_m) + "), pipe=(w" +
         std::to_string(p.num_warps) + ",s" + std::to_string(p.num_stages) + ",sk" +
         std::to_string(p.split_k) + "), launch=(swap_ab=" + (l.swap_ab ? "1" : "0") +
         ",cluster=" + std::to_string(l.cluster_m) + "x" + std::to_string(l.cluster_n) + "," +
         std::string(to_string(l.schedule)) + ",t" + std::to_string(l.num_threads) + "))";
}

std::string to_string(MoeConfig const& c) {
  if (c.gemm1 == c.gemm2) {
    return "uniform " + to_string(c.gemm1);
  }
  return "MoeConfig(gemm1=" + to_string(c.gemm1) + ", gemm2=" + to_string(c.gemm2) + ")";
}

std::string short_string(KernelConfig const& k) {
  KernelConfig const d;
  std::string s = "m" + std::to_string(k.tile.block_m) + "n" + std::to_string(k.tile.block_n) +
                  "k" + std::to_string(k.tile.block_k) + "g" + std::to_string(k.tile.group_m) +
                  "w" + std::to_string(k.pipeline.num_warps) + "s" +
                  std::to_string(k.pipeline.num_stages);
  if (k.pipeline.split_k != d.pipeline.split_k) s += "sk" + std::to_string(k.pipeline.split_k);
  if (k.launch.swap_ab) s += "swap";
  if (k.launch.cluster_m != 1 || k.launch.cluster_n != 1) {
    s += "c" + std::to_string(k.launch.cluster_m) + "x" + std::to_string(k.launch.cluster_n);
  }
  if (k.launch.schedule == Schedule::kPingpong) s += "pp";
  if (k.launch.schedule == Schedule::kCooperative) s += "co";
  if (k.launch.schedule == Schedule::kTmaWarpSpecialized) s += "tw";
  if (k.launch.num_threads != 0) s += "t" + std::to_string(k.launch.num_threads);
  return s;
}

std::string short_string(MoeConfig const& c) {
  if (c.gemm1 == c.gemm2) return short_string(c.gemm1);
  return short_string(c.gemm1) + "|" + short_string(c.gemm2);
}

}  // namespace moetune::core
