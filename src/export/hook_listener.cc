#include "export/hook_listener.h"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "core/text.h"

namespace stallscope {
namespace {

bool FillAddress(const std::string& path, struct sockaddr_un& addr) {
  addr = {};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return true;
}

// The socket's directory must be one only the exporter's user can change:
// other users' jobs need to enter it (so it stays 0755), but whoever can
// write it can replace the socket with their own and read every job's
// records. A symlink, another user's directory or a group/other-writable
// one is refused, naming the path, its owner and its mode. The exception
// is a sticky directory (/tmp) owned by root or the exporter's user: there
// only the owner of a file can remove or rename it, so nobody else can
// swap the socket once it is bound, and Bind() refuses a file of the same
// name that is not a stale socket it may remove.
Status CheckSocketDirectory(const std::string& dir) {
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) return Status::FromErrno(dir, errno);
  const uid_t me = geteuid();
  const bool real_directory = S_ISDIR(st.st_mode);
  const bool trusted_owner = st.st_uid == me || st.st_uid == 0;
  if (real_directory && st.st_uid == me && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0) {
    return Status::Ok();
  }
  if (real_directory && trusted_owner && (st.st_mode & S_ISVTX) != 0) return Status::Ok();
  std::string what = S_ISLNK(st.st_mode) ? "a symlink"
                     : real_directory    ? "a directory"
                                         : "not a directory";
  return Status::InvalidArgument(fmt::format(
      "{}: {} owned by uid {} with mode {:04o}; the hook socket's directory must be a real "
      "directory owned by uid {} (the exporter's user) and writable by no one else, or a sticky "
      "directory such as /tmp owned by root or uid {}. Remove it or give --hook-socket another "
      "path",
      dir, what, st.st_uid, st.st_mode & 07777, me, me));
}

}  // namespace

std::string DefaultHookSocketPath() {
  if (geteuid() == 0) return kSystemHookSocket;
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && *xdg) {
    return std::string(xdg) + "/stallscope/hook.sock";
  }
  return fmt::format("/tmp/stallscope-{}/hook.sock", geteuid());
}

std::string HookSocketForJobs(const std::string& system_socket) {
  struct stat st;
  if (lstat(system_socket.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) return system_socket;
  return DefaultHookSocketPath();
}

Result<HookListener> HookListener::Bind(const std::string& path) {
  struct sockaddr_un addr;
  if (!FillAddress(path, addr)) {
    return Status::InvalidArgument(path + ": path too long for a Unix socket (108 bytes)");
  }
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    std::string dir = path.substr(0, slash);
    if (mkdir(dir.c_str(), 0755) == 0) {
      chmod(dir.c_str(), 0755);  // enterable by other users' jobs whatever the umask
    } else if (errno != EEXIST) {
      return Status::FromErrno(dir, errno);
    }
    if (Status checked = CheckSocketDirectory(dir); !checked.ok()) return checked;
  }
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Status::InvalidArgument(path + ": exists and is not a socket; not replacing it");
    }
    // A live receiver accepts a connect(); a stale file refuses it.
    int probe = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    bool live =
        probe >= 0 && connect(probe, reinterpret_cast<struct sockaddr*>(&addr), sizeof addr) == 0;
    if (probe >= 0) close(probe);
    if (live) {
      return Status::Unavailable(path + ": another receiver (an exporter?) is bound to it");
    }
    if (unlink(path.c_str()) != 0) return Status::FromErrno(path, errno);
  }
  HookListener l;
  l.fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (l.fd_ < 0) return Status::FromErrno("socket", errno);
  if (bind(l.fd_, reinterpret_cast<struct sockaddr*>(&addr), sizeof addr) != 0) {
    return Status::FromErrno(path, errno);
  }
  l.path_ = path;
  int size = 4 << 20;
  setsockopt(l.fd_, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  int one = 1;  // each datagram carries its sender's pid/uid/gid (SCM_CREDENTIALS)
  setsockopt(l.fd_, SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
  return l;
}

HookListener::HookListener(HookListener&& other) noexcept
    : fd_(other.fd_),
      path_(std::move(other.path_)),
      allowed_uids_(std::move(other.allowed_uids_)),
      refused_senders_(other.refused_senders_) {
  other.fd_ = -1;
  other.path_.clear();
}

HookListener& HookListener::operator=(HookListener&& other) noexcept {
  std::swap(fd_, other.fd_);
  std::swap(path_, other.path_);
  std::swap(allowed_uids_, other.allowed_uids_);
  std::swap(refused_senders_, other.refused_senders_);
  return *this;
}

HookListener::~HookListener() {
  if (fd_ >= 0) close(fd_);
  if (!path_.empty()) unlink(path_.c_str());
}

void HookListener::Drain(
    const std::function<void(std::string_view, int sender_pid, int64_t sender_uid)>& on_datagram) {
  char buffer[65536];
  for (;;) {
    iovec io{buffer, sizeof buffer};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    msghdr msg{};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    bool credentials = false;
    ucred sender{};
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
        std::memcpy(&sender, CMSG_DATA(c), sizeof sender);
        credentials = true;
      }
    }
    if (!allowed_uids_.empty() &&
        (!credentials || std::find(allowed_uids_.begin(), allowed_uids_.end(), sender.uid) ==
                             allowed_uids_.end())) {
      ++refused_senders_;
      continue;
    }
    on_datagram(std::string_view(buffer, static_cast<size_t>(n)), credentials ? sender.pid : 0,
                credentials ? static_cast<int64_t>(sender.uid) : -1);
  }
}

Result<std::vector<uid_t>> ParseUidList(const std::string& text) {
  std::vector<uid_t> uids;
  for (std::string_view raw : Split(text, ',')) {
    std::string_view entry = Trim(raw);
    if (entry.empty()) continue;
    uint32_t uid = 0;
    auto [end, error] = std::from_chars(entry.data(), entry.data() + entry.size(), uid);
    if (error != std::errc() || end != entry.data() + entry.size()) {
      return Status::InvalidArgument("--allow-uid " + std::string(entry) +
                                     ": not a numeric uid (`id -u NAME` prints one)");
    }
    uids.push_back(static_cast<uid_t>(uid));
  }
  return uids;
}

}  // namespace stallscope
