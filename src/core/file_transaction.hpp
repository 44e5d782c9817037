// FileTransaction: several files replaced all-or-nothing. stage() writes each new content to a
// temp file beside its target (written and fsynced: every slow or failing step happens here, while
// no target has changed); commit() then renames them into place under an exclusive flock on each
// target's directory (so two writers' sets never interleave), and when one rename fails it puts
// back every file already replaced (from hard-link backups taken first) before returning the
// error. A transaction dropped without commit() removes its temp files.
//
// What it cannot do is survive a kill -9 between two renames: the renames take microseconds, but
// a reader of a set must still detect a torn one (a table's manifest records its vLLM file's
// digest for that, table.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace moetune::core {

class FileTransaction {
 public:
  FileTransaction() = default;
  FileTransaction(FileTransaction const&) = delete;
  FileTransaction& operator=(FileTransaction const&) = delete;
  ~FileTransaction();

  /// Writes `content` to a temp file beside `path` (created 0644 less umask, fsynced). Nothing at
  /// `path` changes. Errors (kIo) name the path and the failing step.
  Status stage(std::string const& path, std::string_view content);
  /// Marks `path` for removal at commit (a stale file a set must not keep); absent is fine.
  void stage_removal(std::string const& path);
  /// Renames every staged file into place and removes the marked ones, in stage order. On a
  /// failure, every target already changed gets its old content back and the error names the
  /// failing path. Call once.
  Status commit();

 private:
  struct Entry {
    std::string path;
    std::string tmp;     ///< "" for a removal
    std::string backup;  ///< hard link to the old file, "" when there was none
  };
  Status take_backups();
  void roll_back(size_t done);
  void remove_temps();

  std::vector<Entry> entries_;
};

}  // namespace moetune::core
