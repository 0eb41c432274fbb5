#include "data/walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "core/threads.h"

namespace stallscope {
namespace {

// struct linux_dirent64: u64 d_ino, s64 d_off, u16 d_reclen, u8 d_type, name.
constexpr size_t kDirentReclenOffset = 16;
constexpr size_t kDirentTypeOffset = 18;
constexpr size_t kDirentNameOffset = 19;
// glibc's readdir uses 32 KiB; twice that halves the system calls on the
// large flat directories datasets tend to be.
constexpr size_t kDirentBufferBytes = 64 << 10;

struct DirTask {
  std::string path;
  int depth = 0;  // of the directory itself; the root is 0
};

// The shared stack of directories to read and the count of those being read:
// the walk is over when both are empty.
class WorkStack {
 public:
  explicit WorkStack(DirTask root) { stack_.push_back(std::move(root)); }

  // Blocks until there is a directory to read (true) or the walk is over.
  bool Pop(DirTask* task) {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [&] { return !stack_.empty() || busy_ == 0; });
    if (stack_.empty()) return false;
    *task = std::move(stack_.back());
    stack_.pop_back();
    ++busy_;
    return true;
  }

  // The subdirectories of a directory just read, and that it is done.
  void Finish(std::vector<DirTask>& children) {
    std::unique_lock lock(mutex_);
    for (DirTask& child : children) stack_.push_back(std::move(child));
    --busy_;
    const bool over = stack_.empty() && busy_ == 0;
    const size_t added = children.size();
    lock.unlock();
    children.clear();
    if (over) {
      ready_.notify_all();
    } else if (added > 1) {
      ready_.notify_all();
    } else if (added == 1) {
      ready_.notify_one();
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<DirTask> stack_;
  size_t busy_ = 0;
};

// open(path) for a directory, also when the path is longer than PATH_MAX:
// then it descends from the longest prefix that fits, a chunk at a time.
int OpenDirectory(const std::string& path) {
  constexpr int kFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  if (path.size() < PATH_MAX) return ::open(path.c_str(), kFlags);
  int fd = AT_FDCWD;
  size_t start = 0;
  while (start < path.size()) {
    size_t end = std::min(path.size(), start + PATH_MAX - 1);
    if (end < path.size()) {
      size_t slash = path.rfind('/', end);
      if (slash == std::string::npos || slash <= start) {
        if (fd != AT_FDCWD) ::close(fd);
        errno = ENAMETOOLONG;  // one component longer than PATH_MAX
        return -1;
      }
      end = slash;
    }
    std::string chunk = path.substr(start, end - start);
    if (chunk.empty()) chunk = "/";
    int next = ::openat(fd, chunk.c_str(), kFlags);
    const int err = errno;
    if (fd != AT_FDCWD) ::close(fd);
    if (next < 0) {
      errno = err;
      return -1;
    }
    fd = next;
    start = end;
    while (start < path.size() && path[start] == '/') ++start;
  }
  return fd;
}

void ReadOneDirectory(const DirTask& task, WalkVisitor& visitor, std::vector<char>& buffer,
                      std::vector<DirTask>& children) {
  const int fd = OpenDirectory(task.path);
  if (fd < 0) {
    visitor.Unreadable(task.path, errno);
    return;
  }
  const int depth = task.depth + 1;
  for (;;) {
    const long n = ::syscall(SYS_getdents64, fd, buffer.data(), buffer.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      visitor.Unreadable(task.path, errno);
      break;
    }
    Status parsed =
        ParseDirents(std::span<const char>(buffer.data(), static_cast<size_t>(n)),
                     [&](const DirentRecord& entry) {
                       if (entry.name == "." || entry.name == "..") return;
                       unsigned char type = entry.type;
                       struct stat st {};
                       bool have_stat = false;
                       if (type == DT_REG || type == DT_UNKNOWN) {
                         const std::string name(entry.name);
                         if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
                           // Deleted since the directory was read: it is simply not there.
                           if (errno != ENOENT)
                             visitor.Unreadable(JoinPath(task.path, entry.name), errno);
                           return;
                         }
                         have_stat = true;
                         if (S_ISREG(st.st_mode))
                           type = DT_REG;
                         else if (S_ISDIR(st.st_mode))
                           type = DT_DIR;
                         else if (S_ISLNK(st.st_mode))
                           type = DT_LNK;
                         else
                           type = DT_FIFO;  // any other kind: counted, not followed
                       }
                       switch (type) {
                         case DT_REG: {
                           FileFacts file;
                           if (have_stat) {
                             file.size = static_cast<uint64_t>(st.st_size);
                             file.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 +
                                             st.st_mtim.tv_nsec;
                           }
                           visitor.File(task.path, entry.name, depth, file);
                           break;
                         }
                         case DT_DIR:
                           if (visitor.Directory(task.path, entry.name, depth)) {
                             children.push_back(DirTask{JoinPath(task.path, entry.name), depth});
                           }
                           break;
                         case DT_LNK:
                           visitor.NotFollowed(task.path, entry.name, depth, EntryKind::kSymlink);
                           break;
                         default:
                           visitor.NotFollowed(task.path, entry.name, depth, EntryKind::kOther);
                           break;
                       }
                     });
    if (!parsed.ok()) {
      visitor.Unreadable(task.path, EIO);  // the kernel handed back a malformed buffer
      break;
    }
  }
  ::close(fd);
}

}  // namespace

std::string JoinPath(std::string_view dir, std::string_view name) {
  std::string out;
  out.reserve(dir.size() + 1 + name.size());
  out += dir;
  if (out.empty() || out.back() != '/') out += '/';
  out += name;
  return out;
}

Status ParseDirentAt(std::span<const char> buffer, size_t offset, DirentRecord* record,
                     size_t* record_length) {
  if (offset > buffer.size() || buffer.size() - offset < kDirentNameOffset) {
    return Status::ParseError(
        "getdents64 buffer", 0,
        "record header runs past the buffer at offset " + std::to_string(offset));
  }
  uint16_t reclen = 0;
  std::memcpy(&reclen, buffer.data() + offset + kDirentReclenOffset, sizeof(reclen));
  if (reclen <= kDirentNameOffset || reclen > buffer.size() - offset) {
    return Status::ParseError(
        "getdents64 buffer", 0,
        "bad record length " + std::to_string(reclen) + " at offset " + std::to_string(offset));
  }
  const char* name = buffer.data() + offset + kDirentNameOffset;
  const size_t name_room = reclen - kDirentNameOffset;
  const size_t name_length = ::strnlen(name, name_room);
  if (name_length == name_room) {
    return Status::ParseError("getdents64 buffer", 0,
                              "unterminated name at offset " + std::to_string(offset));
  }
  record->name = std::string_view(name, name_length);
  record->type = static_cast<unsigned char>(buffer[offset + kDirentTypeOffset]);
  *record_length = reclen;
  return Status::Ok();
}

int DefaultWalkThreads() { return static_cast<int>(std::clamp<size_t>(2 * UsableCpus(), 4, 32)); }

Status Walk(const std::string& root, std::span<WalkVisitor* const> visitors) {
  if (visitors.empty()) return Status::InvalidArgument("a walk needs at least one visitor");
  // Open the root once here, so that a bad root is an error of the walk and
  // not an "unreadable directory" inside it.
  const int fd = OpenDirectory(root);
  if (fd < 0) return Status::FromErrno(root, errno);
  ::close(fd);

  WorkStack stack(DirTask{root, 0});
  auto work = [&stack](WalkVisitor* visitor) {
    std::vector<char> buffer(kDirentBufferBytes);
    std::vector<DirTask> children;
    DirTask task;
    while (stack.Pop(&task)) {
      ReadOneDirectory(task, *visitor, buffer, children);
      stack.Finish(children);
    }
  };
  RunOnThreads(visitors.size(), [&](size_t i) { work(visitors[i]); });
  return Status::Ok();
}

}  // namespace stallscope
