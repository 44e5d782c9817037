// JSON text for every core type, with no JSON library in sight: what the CLI (--json output),
// caches and the tuner use. Keys are exactly the C++ field names; parsers are strict (unknown
// fields get "did you mean", wrong types name the field path and the expected type, malformed
// text names where:line). For every type T: parse_T_json(to_json_text(x), w) == x.
#pragma once

#include <string>
#include <string_view>

#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/resolver.hpp"
#include "core/result.hpp"
#include "core/routing.hpp"
#include "core/source.hpp"
#include "core/table.hpp"

namespace moetune::core {

/// JSON text of a value: an object with 2-space indent, or one line when indent < 0.
std::string to_json_text(MoeProblem const& p, int indent = 2);
std::string to_json_text(KernelConfig const& k, int indent = 2);
std::string to_json_text(MoeConfig const& c, int indent = 2);
std::string to_json_text(Source const& s, int indent = 2);
std::string to_json_text(RoutingProfile const& r, int indent = 2);
std::string to_json_text(ResolverPolicy const& p, int indent = 2);
std::string to_json_text(TableKey const& k, int indent = 2);
std::string to_json_text(Resolution const& r, int indent = 2);
std::string to_json_text(DeviceInfo const& d, int indent = 2);

/// Strict parsers of the texts above. `where` names the origin in errors (a file, "--config").
/// Absent fields keep the type's default; a MoeConfig without "gemm2" is uniform (gemm2 = gemm1).
/// Values are parsed, not validated: call validate() for range checks.
Result<MoeProblem> parse_moe_problem_json(std::string_view text, std::string const& where);
Result<KernelConfig> parse_kernel_config_json(std::string_view text, std::string const& where);
Result<MoeConfig> parse_moe_config_json(std::string_view text, std::string const& where);
Result<Source> parse_source_json(std::string_view text, std::string const& where);
Result<RoutingProfile> parse_routing_profile_json(std::string_view text, std::string const& where);
Result<ResolverPolicy> parse_resolver_policy_json(std::string_view text, std::string const& where);
Result<TableKey> parse_table_key_json(std::string_view text, std::string const& where);
Result<Resolution> parse_resolution_json(std::string_view text, std::string const& where);
Result<DeviceInfo> parse_device_info_json(std::string_view text, std::string const& where);

}  // namespace moetune::core
