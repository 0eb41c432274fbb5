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
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

namespace stallscope {
namespace {

// At most three windows mapped at a time, whatever the file's size: the one
// read, the next (made ready meanwhile) and the last (being unmapped; see
// WindowsAhead). Their pages count in
// the process's RSS while mapped (shared with the page cache, but a user
// reads RSS), so the windows are small; mapping one costs little.
constexpr size_t kWindowBytes = 4 << 20;

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

// The next window mapped, its pages entered into the page table
// (MAP_POPULATE), and the last one unmapped, on a thread of its own while the
// reader reads the current one: the kernel's part of a mapped read (a fault
// per 64 KiB, then the unmapping: a tenth of nccl-log's time on a 1 GB log)
// leaves the reader's core. Populating touches no byte of the file, so the
// reader finds them where they were, in the page cache; a page the file no
// longer has is left unmapped, and the reader's SIGBUS handler deals with it
// as before. One request at a time: Take() waits for the last one. Where no
// thread can be started (a pids cgroup or RLIMIT_NPROC at its limit), the
// caller reads the file with read() instead.
class WindowsAhead {
 public:
  explicit WindowsAhead(int fd) : fd_(fd), worker_(Started()) {}
  ~WindowsAhead() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (worker_.joinable()) worker_.join();
    if (asked_ && done_ != nullptr) munmap(done_, done_length_);  // stopped before it
    if (ready_ != nullptr && ready_ != MAP_FAILED) munmap(ready_, ready_length_);
  }

  // Whether the worker runs; if not, nothing may be asked of it.
  bool running() const { return worker_.joinable(); }

  // Maps [offset, offset + length) ahead, and unmaps `done` (of done_length
  // bytes; nullptr for none), while the caller goes on.
  void Ask(uint64_t offset, size_t length, void* done, size_t done_length) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ask_offset_ = offset;
      ask_length_ = length;
      done_ = done;
      done_length_ = done_length;
      asked_ = true;
    }
    wake_.notify_all();
  }

  // The window last asked for (MAP_FAILED when it could not be mapped), once
  // it is ready; the caller owns it.
  void* Take() {
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(lock, [this] { return !asked_ && ready_ != nullptr; });
    void* map = ready_;
    ready_ = nullptr;
    return map;
  }

 private:
  // The worker, with every signal blocked from its start: a signal for the
  // process (Ctrl-C, a SIGTERM forwarded to it) goes to a thread that
  // expects it, never to this one. None (not joinable) when the system
  // refuses a thread.
  std::thread Started() {
    sigset_t all, before;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &before);
    std::thread worker;
    try {
      worker = std::thread([this] { Work(); });
    } catch (const std::system_error&) {
      // EAGAIN: the caller reads with read().
    }
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    return worker;
  }

  void Work() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stop_ || asked_; });
      if (stop_) return;
      const uint64_t offset = ask_offset_;
      const size_t length = ask_length_;
      void* done = done_;
      const size_t done_length = done_length_;
      lock.unlock();
      if (done != nullptr) munmap(done, done_length);
      void* map = mmap(nullptr, length, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd_,
                       static_cast<off_t>(offset));
      lock.lock();
      ready_ = map;
      ready_length_ = length;
      asked_ = false;
      wake_.notify_all();
    }
  }

  const int fd_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool asked_ = false;
  uint64_t ask_offset_ = 0;
  size_t ask_length_ = 0;
  void* done_ = nullptr;
  size_t done_length_ = 0;
  void* ready_ = nullptr;
  size_t ready_length_ = 0;
  std::thread worker_;  // last: started once the rest is set
};

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
  const auto window_at = [&](uint64_t at) {
    return static_cast<size_t>(std::min<uint64_t>(kWindowBytes, size - at));
  };
  WindowsAhead ahead(fd);
  if (!ahead.running()) {
    sigaction(SIGBUS, &g_previous_bus, nullptr);
    *done = from;
    return Status::Ok();  // read() it
  }
  uint64_t aligned = offset & ~static_cast<uint64_t>(g_page_bytes - 1);
  ahead.Ask(aligned, window_at(aligned), nullptr, 0);
  void* read_last = nullptr;  // the window read before, unmapped by `ahead`
  size_t read_last_length = 0;
  while (offset < size && status.ok()) {
    size_t length = window_at(aligned);
    void* map = ahead.Take();
    if (map == MAP_FAILED) break;
    const uint64_t next = aligned + length;
    if (next < size) {
      ahead.Ask(next, window_at(next), read_last, read_last_length);
      read_last = nullptr;
    }
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
    if (read_last != nullptr) munmap(read_last, read_last_length);
    read_last = map;
    read_last_length = length;
    offset = next;
    aligned = next;
  }
  if (read_last != nullptr) munmap(read_last, read_last_length);
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
