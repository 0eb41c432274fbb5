// A file read as blocks: mapped windows for regular files, read() for the
// rest (see file_blocks.h).
#include "probe/file_blocks.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <string>

namespace stallscope {
namespace {

// One window mapped at a time, whatever the file's size: its pages count in
// the process's RSS while mapped (shared with the page cache, but a user
// reads RSS), so the window is small; mapping it costs little.
constexpr size_t kWindowBytes = 8 << 20;

// The window being read, for the SIGBUS handler.
std::atomic<uintptr_t> g_window_begin{0};
std::atomic<uintptr_t> g_window_end{0};
std::atomic<bool> g_window_lost{false};
uintptr_t g_page_bytes = 4096;
struct sigaction g_previous_bus;
std::mutex g_window_mutex;

// A page of the window that the file no longer has: zeros are mapped over
// the rest of the window, the loss noted, and the read goes on to fail. Any
// other SIGBUS is left to the handler there was before.
void OnBusError(int, siginfo_t* info, void*) {
  uintptr_t at = reinterpret_cast<uintptr_t>(info->si_addr);
  uintptr_t begin = g_window_begin.load();
  uintptr_t end = g_window_end.load();
  if (at >= begin && at < end) {
    uintptr_t page = at & ~(g_page_bytes - 1);
    void* zeros = mmap(reinterpret_cast<void*>(page), end - page, PROT_READ,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (zeros != MAP_FAILED) {
      g_window_lost.store(true);
      return;
    }
  }
  sigaction(SIGBUS, &g_previous_bus, nullptr);  // the fault repeats under it
}

Status ReadPlain(int fd, std::string_view name,
                 const std::function<Status(std::string_view)>& block) {
  // 128 KiB: the copy stays in the cache the parser then reads it from.
  std::string buffer(128 << 10, '\0');
  for (;;) {
    ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("reading " + std::string(name), errno);
    }
    if (n == 0) return Status::Ok();
    if (Status s = block(std::string_view(buffer.data(), static_cast<size_t>(n))); !s.ok()) {
      return s;
    }
  }
}

// The bytes [from, size) of a regular file through mapped windows; *done is
// the offset read up to. A window that cannot be mapped leaves the rest to
// read() (done < size, no error).
Status ReadMapped(int fd, std::string_view name, uint64_t from, uint64_t size,
                  const std::function<Status(std::string_view)>& block, uint64_t* done) {
  std::lock_guard<std::mutex> one_at_a_time(g_window_mutex);
  g_page_bytes = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  struct sigaction bus = {};
  bus.sa_sigaction = OnBusError;
  bus.sa_flags = SA_SIGINFO;
  sigemptyset(&bus.sa_mask);
  if (sigaction(SIGBUS, &bus, &g_previous_bus) != 0) {
    *done = from;
    return Status::Ok();  // read() it
  }
  Status status = Status::Ok();
  uint64_t offset = from;
  while (offset < size && status.ok()) {
    uint64_t aligned = offset & ~static_cast<uint64_t>(g_page_bytes - 1);
    size_t length = static_cast<size_t>(std::min<uint64_t>(kWindowBytes, size - aligned));
    void* map = mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, static_cast<off_t>(aligned));
    if (map == MAP_FAILED) break;
    const char* base = static_cast<const char*>(map);
    uintptr_t begin = reinterpret_cast<uintptr_t>(map);
    g_window_end.store(begin + ((length + g_page_bytes - 1) & ~(g_page_bytes - 1)));
    g_window_begin.store(begin);
    for (size_t at = offset - aligned; at < length && status.ok();) {
      size_t n = std::min(kFileBlockBytes, length - at);
      status = block(std::string_view(base + at, n));
      if (g_window_lost.load()) {
        status = Status::InvalidArgument(
            std::string(name) + ": the file shrank while it was read (it had " +
            std::to_string(size) + " bytes; something truncated or rewrote it near offset " +
            std::to_string(aligned + at) + "); read it again when nothing writes it");
      }
      at += n;
    }
    g_window_begin.store(0);
    g_window_end.store(0);
    g_window_lost.store(false);
    munmap(map, length);
    offset = aligned + length;
  }
  sigaction(SIGBUS, &g_previous_bus, nullptr);
  *done = std::min(offset, size);
  return status;
}

}  // namespace

Status ReadFileBlocks(int fd, std::string_view name,
                      const std::function<Status(std::string_view)>& block) {
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    off_t from = lseek(fd, 0, SEEK_CUR);
    if (from >= 0 && from < st.st_size) {
      uint64_t done = static_cast<uint64_t>(from);
      Status s = ReadMapped(fd, name, static_cast<uint64_t>(from),
                            static_cast<uint64_t>(st.st_size), block, &done);
      if (!s.ok()) return s;
      // What was not mapped, and what the file grew by meanwhile (a job
      // still writing its log), is read().
      if (lseek(fd, static_cast<off_t>(done), SEEK_SET) < 0) {
        return Status::FromErrno("seeking in " + std::string(name), errno);
      }
    }
  }
  return ReadPlain(fd, name, block);
}

}  // namespace stallscope
