// The nlohmann-free face of json_io: each function prints or strictly parses one core type.
#include "core/json_text.hpp"

#include "core/json_io.hpp"

namespace moetune::core {

namespace {

std::string text_of(Json const& j, int indent) {
  std::string s = print_json(j, indent < 0 ? -1 : indent);
  if (indent < 0 && !s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

std::string to_json_text(MoeProblem const& p, int indent) { return text_of(to_json(p), indent); }
std::string to_json_text(KernelConfig const& k, int indent) { return text_of(to_json(k), indent); }
std::string to_json_text(MoeConfig const& c, int indent) { return text_of(to_json(c), indent); }
std::string to_json_text(Source const& s, int indent) { return text_of(to_json(s), indent); }
std::string to_json_text(RoutingProfile const& r, int indent) {
  return text_of(to_json(r), indent);
}
std::string to_json_text(ResolverPolicy const& p, int indent) {
  return text_of(to_json(p), indent);
}
std::string to_json_text(TableKey const& k, int indent) { return text_of(to_json(k), indent); }
std::string to_json_text(Resolution const& r, int indent) { return text_of(to_json(r), indent); }
std::string to_json_text(DeviceInfo const& d, int indent) { return text_of(to_json(d), indent); }

Result<MoeProblem> parse_moe_problem_json(std::string_view text, std::string const& where) {
  return parse_json_as<MoeProblem>(text, where);
}
Result<KernelConfig> parse_kernel_config_json(std::string_view text, std::string const& where) {
  return parse_json_as<KernelConfig>(text, where);
}
Result<MoeConfig> parse_moe_config_json(std::string_view text, std::string const& where) {
  return parse_json_as<MoeConfig>(text, where);
}
Result<Source> parse_source_json(std::string_view text, std::string const& where) {
  return parse_json_as<Source>(text, where);
}
Result<RoutingProfile> parse_routing_profile_json(std::string_view text, std::string const& where) {
  return parse_json_as<RoutingProfile>(text, where);
}
Result<ResolverPolicy> parse_resolver_policy_json(std::string_view text, std::string const& where) {
  return parse_json_as<ResolverPolicy>(text, where);
}
Result<TableKey> parse_table_key_json(std::string_view text, std::string const& where) {
  return parse_json_as<TableKey>(text, where);
}
Result<Resolution> parse_resolution_json(std::string_view text, std::string const& where) {
  return parse_json_as<Resolution>(text, where);
}
Result<DeviceInfo> parse_device_info_json(std::string_view text, std::string const& where) {
  return parse_json_as<DeviceInfo>(text, where);
}

}  // namespace moetune::core
