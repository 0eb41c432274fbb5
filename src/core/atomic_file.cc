#include "core/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace stallscope {

bool PathExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  if (path.empty()) return Status::InvalidArgument("empty output path");
  std::string temp = path + ".tmp-XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0) return Status::FromErrno(path + ": cannot create a temporary file beside it", errno);
  auto fail = [&](std::string_view what, int err) {
    ::close(fd);
    ::unlink(temp.c_str());
    return Status::FromErrno(path + ": " + std::string(what), err);
  };
  // mkstemp makes it 0600; an output file is an ordinary file.
  mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) return fail("chmod", errno);
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write", errno);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("fsync", errno);
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return Status::FromErrno(path + ": close", err);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return Status::FromErrno(path + ": rename into place", err);
  }
  return Status::Ok();
}

Status CheckOutputPath(const std::string& path, bool force, std::string_view flag) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument(fmt::format("{} {}: is a directory", flag, path));
    }
    if (!force) {
      return Status::InvalidArgument(
          fmt::format("{} {}: the file exists; pass --force to overwrite it", flag, path));
    }
  }
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  if (dir.empty()) dir = "/";
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return Status::NotFound(fmt::format("{} {}: no directory {}", flag, path, dir));
  }
  return Status::Ok();
}

}  // namespace stallscope
