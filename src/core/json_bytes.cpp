// check_json_bytes: one pass over the text, strings skipped; see json_bytes.hpp.
#include "core/json_bytes.hpp"

namespace moetune::core {

namespace {

/// "file:line" and "column C (byte B)" of byte `offset`, for messages.
Error byte_error(std::string_view text, std::string const& file, size_t offset,
                 std::string const& what, std::string const& advice) {
  int64_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') ++line, line_start = i + 1;
  }
  return make_error(ErrorCode::kParse,
                    (file.empty() ? std::string("<json>") : file) + ":" + std::to_string(line),
                    what + " at column " + std::to_string(offset - line_start + 1) + " (byte " +
                        std::to_string(offset) + "); " + advice);
}

}  // namespace

Status check_json_bytes(std::string_view text, std::string const& file) {
  if (text.starts_with("\xEF\xBB\xBF")) {
    return byte_error(text, file, 0, "a UTF-8 byte order mark (EF BB BF)",
                      "JSON files have none: save it as UTF-8 without a BOM");
  }
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char const c = text[i];
    if (c == '\0') {
      return byte_error(text, file, i, "a NUL byte",
                        "JSON has no NUL bytes: remove it (a padded or corrupt file?)");
    }
    if (in_string) {
      if (c == '\\') {
        if (i + 1 < text.size() && text[i + 1] == '\0') continue;  // reported next round
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        return byte_error(
            text, file, i,
            "arrays and objects nested deeper than " + std::to_string(kMaxJsonDepth) + " levels",
            "moetune's and vLLM's files nest a few levels, so this is not one of "
            "them");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return Status::Ok();
}

}  // namespace moetune::core
