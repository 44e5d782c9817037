// Atomic file writes: temp file in the same directory, fsync, rename, fsync of the directory.
// A reader never sees a half-written file, and a failed write leaves the old file untouched.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"

namespace moetune::core {

/// Replaces `path` with `content` atomically. Errors name the path and the failing step.
Status write_file_atomic(std::string const& path, std::string_view content);
/// Reads a whole file. A missing file is kNotFound; other failures kIo.
Result<std::string> read_file(std::string const& path);
/// Creates dir (and parents) if needed and checks that it is writable.
Status ensure_writable_dir(std::string const& dir);

}  // namespace moetune::core
