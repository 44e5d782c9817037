// Atomic file writes: temp file in the same directory, fsync, rename, fsync of the directory.
// A reader never sees a half-written file, and a failed write leaves the old file untouched.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"

namespace moetune::core {

/// Replaces `path` with `content` atomically. Errors name the path and the failing step. When
/// `path` is a symlink, the file it points to is replaced and the link kept.
Status write_file_atomic(std::string const& path, std::string_view content);
/// The file a write to `path` replaces: `path` itself, or the final target when it is a symlink.
std::string write_target(std::string const& path);
/// Writes `content` to a new temp file in `path`'s directory (".<name>.tmp.XXXXXX", mode 0666 less
/// umask), fsynced and closed; returns its path. The caller renames or unlinks it.
Result<std::string> write_temp_beside(std::string const& path, std::string_view content);
/// fsyncs a directory so renames in it survive a crash (best effort: some filesystems refuse).
void sync_dir(std::string const& dir);
/// Reads a whole file. A missing file is kNotFound; other failures kIo.
Result<std::string> read_file(std::string const& path);
/// Creates dir (and parents) if needed and checks that it is writable.
Status ensure_writable_dir(std::string const& dir);

}  // namespace moetune::core
