// sm90_l2_sides.hpp: which of the GPU's two L2 partitions each SM sits beside (Hopper: a line homed
// in the far partition crosses the fabric between them, and the reading side keeps a copy), so
// that a tile walk can keep tiles that share operands on one side (the side walk,
// sm90_ws_kernel.cuh side_walk_fetch). Measured, not looked up: which SMs sit where depends on
// the chip's floor-sweeping (bench/l2_sides.cu; bench/results/2026-12-02-l2-sides/).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace moetune::kernels::cuda {

/// Side of each SM: bit s of bits set when SM s sits beside partition 1; sms[i] SMs on side i.
struct L2SideMap {
  static constexpr int kMaxSms = 256;
  std::array<uint32_t, kMaxSms / 32> bits{};
  int sms[2] = {0, 0};
  /// A map with SMs on both sides (a walk over one side would be the plain dynamic walk).
  bool usable() const { return sms[0] > 0 && sms[1] > 0; }
  int side(int sm) const { return static_cast<int>((bits[sm >> 5] >> (sm & 31)) & 1u); }
  /// One digit per SM ('0' / '1'), SM 0 first.
  std::string digits() const;
};

/// The map from one digit per SM ('0' or '1'), exactly sm_count of them. `where` names the
/// source in errors (an environment variable, a file).
core::Result<L2SideMap> l2_side_map_from_digits(std::string_view digits, int sm_count,
                                                std::string_view where);

}  // namespace moetune::kernels::cuda
