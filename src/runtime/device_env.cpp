// MOETUNE_DEVICE_NAME and MOETUNE_TABLES_SAME_DEVICE; see device_env.hpp.
#include "runtime/device_env.hpp"

#include <cstdlib>

#include "core/device_label.hpp"

namespace moetune::runtime {

core::Result<bool> same_device_tables_from_env() {
  char const* v = std::getenv("MOETUNE_TABLES_SAME_DEVICE");
  std::string const value = v == nullptr ? "" : v;
  if (value.empty() || value == "0") return false;
  if (value == "1") return true;
  return core::make_error(core::ErrorCode::kInvalidArgument, "MOETUNE_TABLES_SAME_DEVICE",
                          "'" + value.substr(0, 64) +
                              "' is not 0 or 1; 1 forbids tables made on another device, 0 "
                              "(the default) lets them serve with rule other_device");
}

std::string other_device_note(std::string const& table_path, std::string const& table_device,
                              std::string const& local) {
  return "table " + table_path + " was made on " + table_device + ", this device is " + local;
}

}  // namespace moetune::runtime
