// HookListener: the exporter's end of the Python hook's socket
// (docs/hook-protocol.md) at a fixed, well-known path, so that any job
// started with STALLSCOPE_SOCKET=<path> reports to the exporter on its
// host, where `run` instead makes a private socket per run.
//
// Bind() creates the parent directory when missing (0755) and refuses it,
// naming its owner and mode, unless it is a real directory (not a symlink)
// owned by the exporter's user and writable by no one else, or a sticky
// directory such as /tmp owned by root or that user. It refuses a path
// another live exporter is bound to (a datagram connect() succeeds), and
// replaces a stale socket file left by one that died; it never removes
// anything that is not a socket. The socket file is removed on destruction.
// Not thread-safe; one owner.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace stallscope {

class HookListener {
 public:
  static Result<HookListener> Bind(const std::string& path);
  HookListener(HookListener&& other) noexcept;
  HookListener& operator=(HookListener&& other) noexcept;
  HookListener(const HookListener&) = delete;
  HookListener& operator=(const HookListener&) = delete;
  ~HookListener();

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // Only datagrams sent by these uids are passed on (the kernel's
  // SCM_CREDENTIALS, which a sender cannot forge); the others are dropped
  // and counted. Empty (the default): everyone who can write the socket.
  void AllowUids(std::vector<uid_t> uids) { allowed_uids_ = std::move(uids); }
  uint64_t refused_senders() const { return refused_senders_; }

  // Every waiting datagram, without blocking, with its sender's pid and uid
  // as the kernel gives them (pid 0 and uid -1 when it gave none).
  void Drain(
      const std::function<void(std::string_view, int sender_pid, int64_t sender_uid)>& on_datagram);

 private:
  HookListener() = default;
  int fd_ = -1;
  std::string path_;
  std::vector<uid_t> allowed_uids_;
  uint64_t refused_senders_ = 0;
};

// Where an exporter run as root listens for every user's jobs.
inline constexpr const char* kSystemHookSocket = "/run/stallscope/hook.sock";

// "0,1000,1001" for --allow-uid: numeric uids; a bad entry names itself.
Result<std::vector<uid_t>> ParseUidList(const std::string& text);

// /run/stallscope/hook.sock for root; else $XDG_RUNTIME_DIR/stallscope/hook.sock,
// else /tmp/stallscope-<uid>/hook.sock.
std::string DefaultHookSocketPath();

// The socket a job started by this user should report to: the system
// exporter's socket (`system_socket`, /run/stallscope/hook.sock) when a socket
// is there, since a root exporter serves every user's jobs; else this user's
// DefaultHookSocketPath().
std::string HookSocketForJobs(const std::string& system_socket = kSystemHookSocket);

}  // namespace stallscope
