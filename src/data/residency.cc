#include "data/residency.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace stallscope {
namespace {

// mincore's vector is one byte per page: a 1 GiB window (with 4 KiB pages)
// bounds it to 256 KiB whatever the file's size.
constexpr uint64_t kWindowPages = 1 << 18;

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() { ::close(fd_); }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

}  // namespace

Result<FileResidency> MeasureResidency(const std::string& path) {
  // O_NOATIME where allowed (owner or CAP_FOWNER): looking must not touch.
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME);
  if (fd < 0 && errno == EPERM) fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(path, errno);
  FdCloser closer(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return Status::FromErrno(path, errno);
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(path + ": not a regular file");

  FileResidency out;
  out.size_bytes = static_cast<uint64_t>(st.st_size);
  if (out.size_bytes == 0) return out;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  out.pages = (out.size_bytes + page - 1) / page;

  void* map = ::mmap(nullptr, out.size_bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return Status::FromErrno(path + ": mmap", errno);
  std::vector<unsigned char> in_core(std::min(out.pages, kWindowPages));
  Status status;
  for (uint64_t first = 0; first < out.pages; first += kWindowPages) {
    const uint64_t count = std::min(kWindowPages, out.pages - first);
    char* start = static_cast<char*>(map) + first * page;
    const uint64_t length = std::min(count * page, out.size_bytes - first * page);
    if (::mincore(start, length, in_core.data()) != 0) {
      status = Status::FromErrno(path + ": mincore", errno);
      break;
    }
    for (uint64_t i = 0; i < count; ++i) {
      if ((in_core[i] & 1) == 0) continue;
      ++out.resident_pages;
      const uint64_t offset = (first + i) * page;
      out.resident_bytes += std::min(page, out.size_bytes - offset);
    }
  }
  ::munmap(map, out.size_bytes);
  if (!status.ok()) return status;
  return out;
}

}  // namespace stallscope
