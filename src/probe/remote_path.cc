#include "probe/remote_path.h"

#include <unistd.h>

#include <climits>
#include <cstdlib>

namespace stallscope {

std::optional<MountEntry> RemoteMountHolding(const Root& root, const std::string& path) {
  std::string absolute = path;
  if (absolute.empty() || absolute.front() != '/') {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd) == nullptr) return std::nullopt;
    absolute = std::string(cwd) + "/" + path;
  }
  Result<std::vector<MountEntry>> mounts = ReadMountinfo(root);
  if (!mounts.ok()) return std::nullopt;
  const MountEntry* mount = FindMountForPath(*mounts, NormalizePath(absolute));
  if (mount == nullptr || !IsRemoteMount(*mount)) return std::nullopt;
  return *mount;
}

double RemoteCallDeadlineSeconds() {
  const char* text = std::getenv(kRemoteDeadlineTestVariable);
  if (text == nullptr || *text == '\0') return kRemoteCallDeadlineSeconds;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (*end != '\0' || !(seconds >= 0.1 && seconds <= kRemoteCallDeadlineSeconds)) {
    return kRemoteCallDeadlineSeconds;
  }
  return seconds;
}

std::string DescribeMount(const MountEntry& mount) {
  std::string text = mount.fs_type + " mount " + mount.mount_point;
  if (!mount.source.empty()) text += " (" + mount.source + ")";
  return text;
}

}  // namespace stallscope
