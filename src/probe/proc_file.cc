#include "probe/proc_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

#include "core/read_log.h"

namespace stallscope {
namespace {

// The first read asks for this much: every per-process file and most host
// files fit, so one pread() is the whole file.
constexpr size_t kInitialBytes = 4096;
// kShortOfAPage: seq_file's buffer is at least a page, and the records of
// the files read that way (a vmstat, diskstats or net/dev line) are shorter.
constexpr size_t kSmallestSeqBuffer = 4096;
constexpr size_t kLongestRecord = 512;

// A capture being taken (core/read_log.h) keeps what was read, under the
// path the descriptor was opened at.
// The paths files were opened at while a capture is taken (a descriptor's
// own path would name /proc/net/dev as /proc/PID/net/dev). Touched only
// while a log is set, by the thread that takes the capture.
std::map<int, std::string>& OpenedPaths() {
  static std::map<int, std::string> paths;
  return paths;
}

void NoteOpened(int dir_fd, const char* path, int fd) {
  if (fd < 0 || CurrentReadLog() == nullptr) return;
  std::string full = path;
  if (full.empty() || full.front() != '/') {
    char link[64];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", dir_fd);
    char dir[4096];
    ssize_t n = ::readlink(link, dir, sizeof dir - 1);
    if (dir_fd == AT_FDCWD || n <= 0) return;
    full = std::string(dir, static_cast<size_t>(n)) + "/" + full;
  }
  OpenedPaths()[fd] = std::move(full);
}

void NoteForCapture(int fd, std::string_view text) {
  ReadLog* log = CurrentReadLog();
  if (log == nullptr) return;
  if (auto it = OpenedPaths().find(fd); it != OpenedPaths().end()) {
    log->NoteFile(it->second, text);
    return;
  }
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char path[4096];
  ssize_t n = ::readlink(link, path, sizeof path - 1);
  if (n > 0) log->NoteFile(std::string(path, static_cast<size_t>(n)), text);
}

}  // namespace

int FileBuffer::ReadFrom(int fd, ReadUntil until, size_t max_bytes) {
  size_ = 0;
  for (;;) {
    if (bytes_.size() - size_ < kInitialBytes / 2 && bytes_.size() < max_bytes) {
      bytes_.resize(std::min(std::max(kInitialBytes, bytes_.size() * 2), max_bytes));
    }
    size_t want = std::min(bytes_.size(), max_bytes) - size_;
    if (want == 0) return 0;  // at the cap: the rest is dropped
    ssize_t n = ::pread(fd, bytes_.data() + size_, want, static_cast<off_t>(size_));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      size_ = 0;
      return err;
    }
    if (n == 0) return 0;
    size_ += static_cast<size_t>(n);
    bool short_read = static_cast<size_t>(n) < want;
    if (until == ReadUntil::kShortRead && short_read) return 0;
    if (until == ReadUntil::kShortOfAPage && short_read &&
        static_cast<size_t>(n) <= kSmallestSeqBuffer - kLongestRecord) {
      return 0;
    }
  }
}

ProcFile& ProcFile::operator=(ProcFile&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

int ProcFile::Open(int dir_fd, const char* path) {
  Close();
  fd_ = ::openat(dir_fd, path, O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return errno;
  NoteOpened(dir_fd, path, fd_);
  return 0;
}

void ProcFile::Close() {
  if (fd_ >= 0 && CurrentReadLog() != nullptr) OpenedPaths().erase(fd_);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

int ProcFile::Read(FileBuffer& buffer, ReadUntil until, size_t max_bytes) const {
  if (fd_ < 0) return EBADF;
  int err = buffer.ReadFrom(fd_, until, max_bytes);
  if (err == 0) NoteForCapture(fd_, buffer.view());
  return err;
}

int ReadProcFileOnce(int dir_fd, const char* path, FileBuffer& buffer, ReadUntil until,
                     size_t max_bytes) {
  buffer.size_ = 0;
  int fd = ::openat(dir_fd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  NoteOpened(dir_fd, path, fd);
  int err = buffer.ReadFrom(fd, until, max_bytes);
  if (err == 0) NoteForCapture(fd, buffer.view());
  if (CurrentReadLog() != nullptr) OpenedPaths().erase(fd);
  ::close(fd);
  return err;
}

}  // namespace stallscope
