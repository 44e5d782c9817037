// Atomic writes with POSIX calls: mkstemp in the target's directory, write, fsync, rename, then
// fsync the directory so the rename itself survives a crash.
#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace moetune::core {

namespace {

std::string errno_text() { return std::strerror(errno); }

std::string dir_of(std::string const& path) {
  std::filesystem::path const p(path);
  std::string dir = p.parent_path().string();
  return dir.empty() ? "." : dir;
}

Error io_error(std::string const& path, std::string const& step) {
  return make_error(
      ErrorCode::kIo, path,
      step + " failed: " + errno_text() + "; check that the directory exists and is writable");
}

}  // namespace

std::string write_target(std::string const& path) {
  std::error_code ec;
  if (!std::filesystem::is_symlink(path, ec)) return path;
  std::filesystem::path const target = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : target.string();
}

Result<std::string> write_temp_beside(std::string const& path, std::string_view content) {
  std::string const dir = dir_of(path);
  std::string tmpl = dir + "/." + std::filesystem::path(path).filename().string() + ".tmp.XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int const fd = ::mkstemp(name.data());
  if (fd < 0) return io_error(path, "creating a temp file in " + dir);
  std::string const tmp(name.data());
  auto fail = [&](std::string const& step) {
    Error e = io_error(path, step);
    ::close(fd);
    ::unlink(tmp.c_str());
    return e;
  };
  // mkstemp makes 0600; tables are shared artefacts, so use the usual 0644 (minus umask).
  mode_t const mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  size_t written = 0;
  while (written < content.size()) {
    ssize_t const n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write of " + tmp);
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("fsync of " + tmp);
  if (::close(fd) != 0) {
    Error e = io_error(path, "close of " + tmp);
    ::unlink(tmp.c_str());
    return e;
  }
  return tmp;
}

void sync_dir(std::string const& dir) {
  int const dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    // NOTE: some filesystems refuse fsync on a directory (EINVAL); the file itself is durable.
    ::fsync(dfd);
    ::close(dfd);
  }
}

Status write_file_atomic(std::string const& path_given, std::string_view content) {
  std::string const path = write_target(path_given);
  auto tmp = write_temp_beside(path, content);
  if (!tmp.ok()) return tmp.error();
  if (::rename(tmp->c_str(), path.c_str()) != 0) {
    Error e = io_error(path, "rename of " + *tmp);
    ::unlink(tmp->c_str());
    return e;
  }
  sync_dir(dir_of(path));
  return Status::Ok();
}

Result<std::string> read_file(std::string const& path) {
  std::error_code ec;
  auto const status = std::filesystem::status(path, ec);
  if (status.type() == std::filesystem::file_type::not_found) {
    return make_error(ErrorCode::kNotFound, path, "file not found");
  }
  if (ec) {
    return make_error(ErrorCode::kIo, path,
                      "cannot read: " + ec.message() + "; fix the path or remove it");
  }
  if (status.type() == std::filesystem::file_type::directory) {
    return make_error(ErrorCode::kIo, path, "is a directory, expected a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kIo, path, "cannot open for reading: " + errno_text());
  // Read in blocks into one string: a stringstream's doubling buffer and its final copy held
  // three times a 100 MB manifest at once. The size is not trusted (a pipe or /proc file has
  // none, a file may grow): read until the end.
  constexpr size_t kBlockBytes = size_t{1} << 20;
  std::string text;
  if (status.type() == std::filesystem::file_type::regular) {
    std::uintmax_t const bytes = std::filesystem::file_size(path, ec);
    if (!ec) text.reserve(static_cast<size_t>(bytes) + kBlockBytes);  // the last read fits too
  }
  while (in) {
    size_t const used = text.size();
    text.resize(used + kBlockBytes);
    in.read(text.data() + used, static_cast<std::streamsize>(kBlockBytes));
    text.resize(used + static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) return make_error(ErrorCode::kIo, path, "read failed: " + errno_text());
  return text;
}

Status ensure_writable_dir(std::string const& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return make_error(ErrorCode::kIo, dir,
                      "cannot create directory: " + ec.message() + "; choose a writable location");
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    return make_error(ErrorCode::kIo, dir, "exists but is not a directory");
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    return make_error(
        ErrorCode::kIo, dir,
        "directory is not writable: " + errno_text() + "; choose a writable location");
  }
  return Status::Ok();
}

}  // namespace moetune::core
