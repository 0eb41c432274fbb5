#include "probe/proc_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

namespace stallscope {
namespace {

// The first read asks for this much: every per-process file and most host
// files fit, so one pread() is the whole file.
constexpr size_t kInitialBytes = 4096;
// kShortOfAPage: seq_file's buffer is at least a page, and the records of
// the files read that way (a vmstat, diskstats or net/dev line) are shorter.
constexpr size_t kSmallestSeqBuffer = 4096;
constexpr size_t kLongestRecord = 512;

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
  return fd_ < 0 ? errno : 0;
}

void ProcFile::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

int ProcFile::Read(FileBuffer& buffer, ReadUntil until, size_t max_bytes) const {
  if (fd_ < 0) return EBADF;
  return buffer.ReadFrom(fd_, until, max_bytes);
}

int ReadProcFileOnce(int dir_fd, const char* path, FileBuffer& buffer, ReadUntil until,
                     size_t max_bytes) {
  buffer.size_ = 0;
  int fd = ::openat(dir_fd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  int err = buffer.ReadFrom(fd, until, max_bytes);
  ::close(fd);
  return err;
}

}  // namespace stallscope
