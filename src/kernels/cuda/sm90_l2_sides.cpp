// sm90_l2_sides.cpp: see sm90_l2_sides.hpp.
#include "kernels/cuda/sm90_l2_sides.hpp"

namespace moetune::kernels::cuda {

std::string L2SideMap::digits() const {
  std::string out;
  for (int s = 0; s < sms[0] + sms[1]; ++s) out += static_cast<char>('0' + side(s));
  return out;
}

core::Result<L2SideMap> l2_side_map_from_digits(std::string_view digits, int sm_count,
                                                std::string_view where) {
  if (sm_count <= 0 || sm_count > L2SideMap::kMaxSms) {
    return core::make_error(core::ErrorCode::kInvalidArgument, std::string(where),
                            "an L2 side map holds 1.." + std::to_string(L2SideMap::kMaxSms) +
                                " SMs, the device has " + std::to_string(sm_count));
  }
  if (static_cast<int>(digits.size()) != sm_count) {
    return core::make_error(core::ErrorCode::kInvalidArgument, std::string(where),
                            "L2 side map of " + std::to_string(digits.size()) +
                                " digits, the device has " + std::to_string(sm_count) +
                                " SMs; give one digit (0 or 1) per SM");
  }
  L2SideMap m;
  for (int s = 0; s < sm_count; ++s) {
    const char c = digits[static_cast<size_t>(s)];
    if (c != '0' && c != '1') {
      return core::make_error(core::ErrorCode::kInvalidArgument, std::string(where),
                              "L2 side map digit " + std::to_string(s) + " is '" +
                                  std::string(1, c) + "', expected 0 or 1");
    }
    const int side = c - '0';
    m.bits[static_cast<size_t>(s >> 5)] |= static_cast<uint32_t>(side) << (s & 31);
    ++m.sms[side];
  }
  return m;
}

}  // namespace moetune::kernels::cuda
