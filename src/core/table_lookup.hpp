// TableLookup: a table opened to serve lookups (moetune resolve, lint's look at a table's key)
// without reading every row. Opening scans both files a block at a time (core/json_scan.hpp) and
// keeps the key, the policy and each row's key and place; a row is parsed, from both files, only
// when asked for. A 100k-row table then costs its row keys in memory, not its text or its rows.
//
// What the scan cannot vouch for it leaves to load_table, so errors are load_table's, word for
// word: a malformed or oddly spelt file (escaped or non-canonical keys), a duplicate key, a
// version outside what this build reads, rows only in one file, a manifest whose key disagrees
// with the file name. The rows a lookup serves are checked as load_table checks every row (their
// fields, and the manifest's GEMM1 against the vLLM file's); the other rows are checked only as
// JSON, which `moetune lint` and `show` read in full.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "core/source.hpp"
#include "core/table.hpp"

namespace moetune::core {

class TableLookup {
 public:
  /// Opens the table at `path` (a vLLM file; its manifest beside it when present). When the scan
  /// refuses the files, load_table reads them: its error is returned, or, if it reads them after
  /// all, the lookup serves the table it read.
  static Result<TableLookup> open(std::string const& path);

  /// The table as load_table gives it (key, policy, extra, key_order, has_manifest), no rows.
  Table const& head() const { return head_; }
  /// Every row key, ascending.
  std::vector<int64_t> const& keys() const { return keys_; }
  /// The row at key `m` (one of keys()), read from both files as load_table reads it. When it
  /// does not read, load_table's error for the table; kNotFound when `m` is not a key.
  Result<TableRow> row(int64_t m);

 private:
  /// A file descriptor open for reading, closed when dropped.
  class File {
   public:
    File() = default;
    explicit File(int fd) : fd_(fd) {}
    File(File&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    File& operator=(File&& other) noexcept;
    File(File const&) = delete;
    File& operator=(File const&) = delete;
    ~File();
    int get() const { return fd_; }

   private:
    int fd_ = -1;
  };
  /// Where one row's value lies in a file.
  struct RowPlace {
    int64_t m = 0;
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };

  TableLookup() = default;
  /// Scans both files; false when anything is left to load_table.
  bool scan();
  bool scan_vllm();
  bool scan_manifest();
  /// Serves from load_table's reading of the files, or returns its error.
  Status load_whole();
  /// The row read from both files; none when it is left to load_table.
  std::optional<TableRow> read_row(int64_t m) const;

  std::string path_;
  Table head_;
  std::vector<int64_t> keys_;
  std::vector<RowPlace> vllm_rows_;      ///< by M, ascending
  std::vector<RowPlace> manifest_rows_;  ///< by M, ascending
  std::vector<Source> sources_;          ///< the manifest's "sources" (version 2)
  File vllm_file_;
  File manifest_file_;
  bool whole_ = false;  ///< rows_ holds every row: load_table read the table
  std::map<int64_t, TableRow> rows_;
};

}  // namespace moetune::core
