// Device labels; see device_label.hpp.
#include "core/device_label.hpp"

#include <cctype>
#include <cstdlib>

#include "core/table.hpp"

namespace moetune::core {

std::string device_label(std::string_view device_name) {
  if (device_name == "cpu" || device_name.rfind("cpu:", 0) == 0) return "cpu";
  return vllm_device_name(device_name);
}

std::string device_label(DeviceInfo const& device) {
  return device.arch == "cpu" ? "cpu" : device_label(device.name);
}

Result<std::string> checked_device_label(std::string_view device_name, std::string const& where) {
  bool ok = !device_name.empty() && device_name.size() <= 128;
  for (char c : device_name) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == ' ' || c == '_' || c == '-' ||
                c == '.' || c == '(' || c == ')');
  }
  if (!ok) {
    return make_error(ErrorCode::kInvalidArgument, where,
                      "'" + std::string(device_name.substr(0, 128)) +
                          "' is not a device name (it becomes part of table file names); use "
                          "letters, digits, ' ', '_', '-' or '.', e.g. NVIDIA_H100_80GB_HBM3");
  }
  return device_label(device_name);
}

bool is_other_device(std::string_view table_device, std::string_view local) {
  if (table_device.empty() || local.empty()) return false;
  return device_label(table_device) != device_label(local);
}

Result<std::string> local_device_label(DeviceInfo const& device) {
  char const* v = std::getenv("MOETUNE_DEVICE_NAME");
  if (v == nullptr || *v == '\0') return device_label(device);
  return checked_device_label(v, "MOETUNE_DEVICE_NAME");
}

}  // namespace moetune::core
