// FileTransaction: temps first, then backups and renames under directory locks; see
// file_transaction.hpp.
#include "core/file_transaction.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/atomic_file.hpp"

namespace moetune::core {

namespace {

std::string dir_of(std::string const& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

/// Exclusive flocks on a set of directories, taken in sorted order (two transactions over the
/// same directories never deadlock) and released on destruction. A directory that cannot be
/// opened or locked (a filesystem without flock) is written unlocked, as a single file would be.
class DirLocks {
 public:
  explicit DirLocks(std::set<std::string> const& dirs) {
    for (auto const& d : dirs) {
      int const fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) continue;
      while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
      }
      fds_.push_back(fd);
    }
  }
  ~DirLocks() {
    for (int fd : fds_) ::close(fd);  // closing releases the flock
  }

 private:
  std::vector<int> fds_;
};

/// A name beside `path` for its backup: ".<name>.bak.<pid>.<n>", unique within this process.
std::string backup_name(std::string const& path) {
  static std::atomic<int> counter{0};
  return dir_of(path) + "/." + std::filesystem::path(path).filename().string() + ".bak." +
         std::to_string(::getpid()) + "." + std::to_string(counter++);
}

Error io_error(std::string const& path, std::string const& step, int err) {
  return make_error(ErrorCode::kIo, path,
                    step + " failed: " + std::strerror(err) +
                        "; no file of the set was changed (check that the directory is writable)");
}

}  // namespace

FileTransaction::~FileTransaction() { remove_temps(); }

Status FileTransaction::stage(std::string const& path_given, std::string_view content) {
  std::string const path = write_target(path_given);
  auto tmp = write_temp_beside(path, content);
  if (!tmp.ok()) return tmp.error();
  entries_.push_back(Entry{path, *tmp, ""});
  return Status::Ok();
}

void FileTransaction::stage_removal(std::string const& path) {
  entries_.push_back(Entry{path, "", ""});
}

Status FileTransaction::take_backups() {
  for (Entry& e : entries_) {
    struct stat st {};
    // Nothing to put back when there is no file; a directory there makes the rename fail anyway.
    if (::lstat(e.path.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) continue;
    std::string const backup = backup_name(e.path);
    if (::link(e.path.c_str(), backup.c_str()) == 0) {
      e.backup = backup;
      continue;
    }
    // A filesystem without hard links: copy the old content instead.
    auto old = read_file(e.path);
    if (!old.ok()) return old.error();
    auto copy = write_temp_beside(e.path, *old);
    if (!copy.ok()) return copy.error();
    e.backup = *copy;
  }
  return Status::Ok();
}

Status FileTransaction::commit() {
  std::set<std::string> dirs;
  for (Entry const& e : entries_) dirs.insert(dir_of(e.path));
  DirLocks const locks(dirs);
  if (Status st = take_backups(); !st.ok()) {
    remove_temps();
    return st;
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    bool const ok = e.tmp.empty() ? (::unlink(e.path.c_str()) == 0 || errno == ENOENT)
                                  : ::rename(e.tmp.c_str(), e.path.c_str()) == 0;
    if (!ok) {
      Error const err = io_error(e.path, e.tmp.empty() ? "removal" : "rename of " + e.tmp, errno);
      roll_back(i);
      return err;
    }
    e.tmp.clear();  // renamed: no longer ours to remove
  }
  for (auto const& d : dirs) sync_dir(d);
  for (Entry& e : entries_) {
    if (!e.backup.empty()) ::unlink(e.backup.c_str());
    e.backup.clear();
  }
  return Status::Ok();
}

void FileTransaction::roll_back(size_t done) {
  for (size_t j = 0; j < done; ++j) {
    Entry& e = entries_[j];
    if (!e.backup.empty()) {
      if (::rename(e.backup.c_str(), e.path.c_str()) == 0) e.backup.clear();
    } else {
      ::unlink(e.path.c_str());  // it did not exist before the transaction
    }
  }
  remove_temps();
}

void FileTransaction::remove_temps() {
  for (Entry& e : entries_) {
    if (!e.tmp.empty()) ::unlink(e.tmp.c_str());
    if (!e.backup.empty()) ::unlink(e.backup.c_str());
    e.tmp.clear();
    e.backup.clear();
  }
}

}  // namespace moetune::core
