// A validating JSON scanner: finds where values lie in a text or a file without building them, so
// a reader can parse only the members it needs (the one row a lookup serves out of 100k). It
// accepts only texts core's parser (json_parse.cpp) accepts; a caller it refuses falls back to
// that parser, which then names the error. Duplicate keys are the caller's to find.
// nlohmann-free, as json_bytes.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

namespace moetune::core {

/// scan_json_value's answers besides an end: the value is malformed, or the text ended inside it.
inline constexpr size_t kJsonMalformed = std::string_view::npos;
inline constexpr size_t kJsonCut = std::string_view::npos - 1;

/// The first index at or after `pos` that is not JSON whitespace (space, tab, LF, CR).
size_t skip_json_space(std::string_view text, size_t pos);

/// The end (one past) of the JSON value starting exactly at text[pos], checked as the parser
/// checks it: strings hold no control bytes, only JSON's escapes (\u surrogates paired) and valid
/// UTF-8; numbers follow JSON's grammar; literals are true, false and null; arrays and objects
/// are well formed and nested at most kMaxJsonDepth levels, counting the `depth` levels open
/// around the value. kJsonMalformed, or kJsonCut when the text ends before the value does (a
/// number that runs to the end of the text may go on past it too).
size_t scan_json_value(std::string_view text, size_t pos, int depth = 0);

/// A member of a scanned object: its key's text between the quotes (`key_escaped`: it holds a
/// backslash escape, so it is not the key's value; readers that match keys refuse such a key
/// rather than decode it), its value's text, and where that value starts in the file.
struct JsonFileMember {
  std::string_view key;
  bool key_escaped = false;
  std::string_view value;
  uint64_t offset = 0;
};
/// Receives members; returning false stops the scan, which then fails.
using JsonFileMemberFn = std::function<bool(JsonFileMember const& member)>;

/// Checks that the file open at `fd`, read from its start a block at a time, is one JSON object
/// and nothing else but whitespace (so a byte order mark or a NUL byte fails it, as
/// check_json_bytes refuses them), handing over the root's members in file order: each to
/// `on_member`, except the member named `stream_key`, which must be an object and whose own
/// members go to `on_streamed` one at a time (an empty `stream_key` streams the root's members).
/// Member views are valid during the call only. Memory is a block and the largest member, not
/// the file. False on a read error, malformed text, no `stream_key` member or a second one, or a
/// callback that returned false.
bool scan_json_file(int fd, std::string_view stream_key, JsonFileMemberFn const& on_member,
                    JsonFileMemberFn const& on_streamed);

}  // namespace moetune::core
