#include "record/stale_sockets.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/text.h"

namespace stallscope {
namespace {

constexpr std::string_view kPrefix = "stallscope-";
constexpr size_t kRandomPart = 6;  // mkdtemp's XXXXXX

bool ProcessExists(int pid) { return kill(pid, 0) == 0 || errno == EPERM; }

// True when a datagram to `path` is refused: nobody has the socket bound.
bool SocketIsDead(const std::string& path) {
  struct sockaddr_un addr {};
  if (path.size() >= sizeof addr.sun_path) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  int rc = connect(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof addr);
  int error = errno;
  close(fd);
  return rc != 0 && (error == ECONNREFUSED || error == ENOENT);
}

}  // namespace

int HookDirectoryPid(std::string_view name) {
  if (!name.starts_with(kPrefix)) return -1;
  name.remove_prefix(kPrefix.size());
  size_t dash = name.find('-');
  if (dash == std::string_view::npos || name.size() - dash - 1 != kRandomPart) return -1;
  std::optional<int64_t> pid = ParseInt(name.substr(0, dash));
  if (!pid || *pid <= 0 || *pid > (1 << 30)) return -1;
  return static_cast<int>(*pid);
}

void RemoveStepRings(const std::string& directory) {
  DIR* dir = opendir(directory.c_str());
  if (dir == nullptr) return;
  while (struct dirent* entry = readdir(dir)) {
    std::string_view name = entry->d_name;
    if (!name.starts_with("ring-") || !ParseInt(name.substr(5))) continue;
    const std::string path = directory + "/" + entry->d_name;
    struct stat info;
    if (lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode)) unlink(path.c_str());
  }
  closedir(dir);
}

int RemoveStaleHookDirectories(const std::string& parent) {
  DIR* dir = opendir(parent.c_str());
  if (dir == nullptr) return 0;
  int removed = 0;
  while (struct dirent* entry = readdir(dir)) {
    int pid = HookDirectoryPid(entry->d_name);
    if (pid < 0 || pid == getpid() || ProcessExists(pid)) continue;
    std::string path = parent + "/" + entry->d_name;
    struct stat info;
    if (lstat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != geteuid()) {
      continue;
    }
    std::string socket_path = path + "/hook.sock";
    struct stat sock;
    if (lstat(socket_path.c_str(), &sock) == 0) {
      if (!S_ISSOCK(sock.st_mode) || sock.st_uid != geteuid() || !SocketIsDead(socket_path)) {
        continue;
      }
      unlink(socket_path.c_str());
    }
    RemoveStepRings(path);
    if (rmdir(path.c_str()) == 0) ++removed;
  }
  closedir(dir);
  return removed;
}

}  // namespace stallscope
