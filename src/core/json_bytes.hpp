// The byte-level checks every JSON reader runs before parsing: no UTF-8 byte order mark, no NUL
// byte, and nesting no deeper than kMaxJsonDepth. nlohmann skips a BOM and stops at a NUL
// without a word, and a value nested 50k levels deep overflows the stack of anything that walks
// it recursively (printing it in a message did); these checks refuse all three first, naming
// the line and column. nlohmann-free, so FlatJson shares them.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"

namespace moetune::core {

/// Deepest nesting of arrays and objects any JSON file moetune reads may have. Our formats nest
/// at most 6 levels (a recipe's pinned row's config), vLLM's 2.
inline constexpr int kMaxJsonDepth = 64;

/// Checks `text` (from `file`) for a leading UTF-8 BOM, a NUL byte anywhere, and arrays/objects
/// nested deeper than kMaxJsonDepth (brackets inside strings do not count). Fails with kParse,
/// where = "file:line" and the column and byte offset in the message.
Status check_json_bytes(std::string_view text, std::string const& file);

}  // namespace moetune::core
