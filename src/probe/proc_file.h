// ProcFile: one /proc file kept open between samples and re-read from offset
// 0 each time; FileBuffer: the reusable bytes it reads into.
//
// procfs regenerates a seq_file when it is read at offset 0, so a sampler
// that keeps the descriptor pays one pread() per sample instead of the path
// walk, the seq_file allocation and the teardown of open()/read()/close().
// A descriptor of /proc/PID/... names the process it was opened for, not its
// pid number: once that process is gone every read fails with ESRCH, even if
// the pid was reused, so a kept file never reads a stranger. Every open uses
// O_CLOEXEC: the tool spawns the job and must not leak descriptors into it.
// Functions return 0 or an errno, so callers can tell a vanished process
// (ENOENT, ESRCH) from a denied one (EACCES). Move-only; thread-compatible.
#pragma once

#include <cerrno>
#include <cstddef>
#include <string>
#include <string_view>

namespace stallscope {

// Where a file ends, so that no read() is spent only to learn it.
// kShortRead: a read that returns less than was asked is the end. True of
// regular files, of cmdline, and of the proc files printed in one go
// (single_open: /proc/PID/{stat,io,status,smaps_rollup}, meminfo, /proc/stat,
// PSI). kShortOfAPage: for seq_files printed a record at a time into a
// buffer of at least a page (vmstat, diskstats, net/dev): a read stops short
// when the file ends or when the next record does not fit, so a short read of
// under a page less 512 bytes is the end if every record is under 512 bytes.
// kEndOfFile: until read() returns 0, for anything else.
enum class ReadUntil { kShortRead, kShortOfAPage, kEndOfFile };

// Reads past this are dropped: no /proc file a sampler reads comes near it.
constexpr size_t kMaxProcFileBytes = 8 << 20;

// Grows to the largest file read through it and stays there: the hot path
// does not allocate once every file has been read once.
class FileBuffer {
 public:
  std::string_view view() const { return {bytes_.data(), size_}; }
  bool empty() const { return size_ == 0; }

 private:
  friend class ProcFile;
  friend int ReadProcFileOnce(int dir_fd, const char* path, FileBuffer& buffer, ReadUntil until,
                              size_t max_bytes);
  // pread()s fd from offset 0 into the buffer; 0 or errno.
  int ReadFrom(int fd, ReadUntil until, size_t max_bytes);
  std::string bytes_;  // sized to the capacity; the first size_ bytes are the file
  size_t size_ = 0;
};

class ProcFile {
 public:
  ProcFile() = default;
  ProcFile(const ProcFile&) = delete;
  ProcFile& operator=(const ProcFile&) = delete;
  ProcFile(ProcFile&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  ProcFile& operator=(ProcFile&& other) noexcept;
  ~ProcFile() { Close(); }

  // path relative to dir_fd (an open directory), or absolute. 0 or errno.
  int Open(int dir_fd, const char* path);
  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void Close();

  // The whole file, at most max_bytes (the rest is dropped). 0 or errno.
  int Read(FileBuffer& buffer, ReadUntil until, size_t max_bytes = kMaxProcFileBytes) const;

 private:
  int fd_ = -1;
};

// open()/read()/close() of one file, for files read once or rarely.
int ReadProcFileOnce(int dir_fd, const char* path, FileBuffer& buffer, ReadUntil until,
                     size_t max_bytes = kMaxProcFileBytes);

// ENOENT (the pid directory is gone) or ESRCH (the process exited while its
// file was open, or a zombie was reaped).
inline bool IsVanishedErrno(int err) { return err == ENOENT || err == ESRCH; }

}  // namespace stallscope
