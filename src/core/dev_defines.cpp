#include "core/dev_defines.hpp"

#include <sstream>

namespace moetune::core {
namespace {

bool is_ident_char(char c, bool first) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
         (!first && c >= '0' && c <= '9');
}

bool is_define(std::string const& tok) {
  const auto eq = tok.find('=');
  const std::string name = tok.substr(0, eq);
  bool ok = !name.empty();
  for (size_t i = 0; ok && i < name.size(); ++i) ok = is_ident_char(name[i], i == 0);
  if (!ok || eq == std::string::npos) return ok;
  const std::string val = tok.substr(eq + 1);
  ok = !val.empty();
  for (char c : val) ok = ok && (is_ident_char(c, false) || c == '.' || c == '-');
  return ok;
}

}  // namespace

Result<std::vector<std::string>> parse_dev_defines(std::string_view value,
                                                   std::string_view what_to_do) {
  std::vector<std::string> out;
  std::istringstream is{std::string(value)};
  std::string tok;
  while (is >> tok) {
    if (!is_define(tok)) {
      return make_error(ErrorCode::kInvalidArgument, "MOETUNE_DEV_NVRTC_DEFINES",
                        "'" + tok +
                            "' is not NAME or NAME=VALUE (NAME a C identifier, VALUE letters, "
                            "digits, '_', '.', '-'); " +
                            std::string(what_to_do));
    }
    out.push_back(tok);
  }
  return out;
}

}  // namespace moetune::core
