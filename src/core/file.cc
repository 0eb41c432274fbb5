#include "core/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "core/read_log.h"
#include "core/text.h"

namespace stallscope {

Root::Root(std::string dir) : dir_(std::move(dir)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  if (dir_.empty()) dir_ = "/";
}

std::string Root::Path(std::string_view absolute) const {
  if (IsLive()) return std::string(absolute);
  std::string out = dir_;
  if (absolute.empty() || absolute.front() != '/') out += '/';
  out += absolute;
  return out;
}

Result<OpenedFile> OpenForReading(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(path, errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Status::FromErrno(path, err);
  }
  return OpenedFile{fd, static_cast<uint64_t>(st.st_size)};
}

Result<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(path, errno);
  std::string out;
  char buffer[16384];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return Status::FromErrno(path, err);
    }
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      ::close(fd);
      return Status::ParseError(path, 0,
                                "file larger than " + std::to_string(max_bytes) + " bytes");
    }
  }
  ::close(fd);
  if (ReadLog* log = CurrentReadLog()) log->NoteFile(path, out);
  return out;
}

Result<std::string> ReadAttribute(const std::string& path) {
  Result<std::string> text = ReadFile(path, 1 << 16);
  if (!text.ok()) return text.status();
  std::string_view view = *text;
  size_t newline = view.find('\n');
  if (newline != std::string_view::npos) view = view.substr(0, newline);
  return std::string(Trim(view));
}

std::optional<uint64_t> ReadUintAttribute(const std::string& path) {
  Result<std::string> text = ReadAttribute(path);
  if (!text.ok()) return std::nullopt;
  return ParseUint(*text);
}

Result<std::vector<std::string>> ListDirectory(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return Status::FromErrno(path, errno);
  std::vector<std::string> names;
  while (struct dirent* entry = ::readdir(dir)) {
    std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    names.emplace_back(name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  if (ReadLog* log = CurrentReadLog()) log->NoteDirectory(path);
  return names;
}

}  // namespace stallscope
