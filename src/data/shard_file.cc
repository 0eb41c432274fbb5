#include "data/shard_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace stallscope {
namespace {
// Small enough to stay in the CPU's cache between the copy in and write():
// 4 MiB made each write() copy from memory, not cache (bench/pack_vs_tar.sh).
constexpr size_t kBufferSize = 256 << 10;
}  // namespace

Status SyncDirectory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(dir, errno);
  int rc = fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) return Status::FromErrno(fmt::format("fsync {}", dir), err);
  return Status::Ok();
}

Result<std::unique_ptr<ShardFile>> ShardFile::Create(const std::string& dir,
                                                     const std::string& name) {
  std::string temp = fmt::format("{}/.{}.tmp", dir, name);
  ::unlink(temp.c_str());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(fmt::format("creating {}", temp), errno);
  return std::unique_ptr<ShardFile>(
      new ShardFile(fd, dir, std::move(temp), fmt::format("{}/{}", dir, name)));
}

ShardFile::ShardFile(int fd, std::string dir, std::string temp, std::string final_path)
    : fd_(fd),
      dir_(std::move(dir)),
      temp_path_(std::move(temp)),
      final_path_(std::move(final_path)),
      buf_(std::make_unique_for_overwrite<char[]>(kBufferSize)) {}

ShardFile::~ShardFile() { Abort(); }

Status ShardFile::WriteAll(const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return Status::FromErrno(fmt::format("writing {}", temp_path_), errno);
    if (w == 0) return Status::FromErrno(fmt::format("writing {}", temp_path_), ENOSPC);
    p += w;
    n -= static_cast<size_t>(w);
  }
  return Status::Ok();
}

Status ShardFile::Flush() {
  Status s = WriteAll(buf_.get(), used_);
  used_ = 0;
  return s;
}

Status ShardFile::Append(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  offset_ += size;
  if (used_ + size <= kBufferSize) {
    std::memcpy(buf_.get() + used_, p, size);
    used_ += size;
    return Status::Ok();
  }
  if (Status s = Flush(); !s.ok()) return s;
  if (size >= kBufferSize / 2) return WriteAll(p, size);
  std::memcpy(buf_.get(), p, size);
  used_ = size;
  return Status::Ok();
}

Status ShardFile::Commit() {
  if (Status s = Flush(); !s.ok()) return s;
  if (fsync(fd_) != 0) return Status::FromErrno(fmt::format("fsync {}", temp_path_), errno);
  if (::close(fd_) != 0) {
    fd_ = -1;
    return Status::FromErrno(fmt::format("closing {}", temp_path_), errno);
  }
  fd_ = -1;
  if (std::rename(temp_path_.c_str(), final_path_.c_str()) != 0)
    return Status::FromErrno(fmt::format("renaming {} to {}", temp_path_, final_path_), errno);
  committed_ = true;
  return SyncDirectory(dir_);
}

void ShardFile::Abort() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!committed_) ::unlink(temp_path_.c_str());
  committed_ = true;  // nothing left to undo
}

}  // namespace stallscope
