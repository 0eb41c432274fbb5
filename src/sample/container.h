// Whether this process runs inside a container, and which runtime, with the
// clues that say so. Filled by src/probe/cgroup (ReadContainerInfo); plain
// data, thread-compatible.
#pragma once

#include <string>
#include <vector>

namespace stallscope {

struct ContainerInfo {
  bool in_container = false;
  // "kubernetes", "docker", "podman", "containerd", "cri-o", "lxc",
  // "systemd-nspawn" or the raw value of container= from PID 1's
  // environment; empty when not in a container or the runtime is unknown.
  std::string runtime;
  // One line per clue, e.g. "/.dockerenv exists",
  // "/proc/self/cgroup: 0::/kubepods/burstable/pod1/abc".
  std::vector<std::string> evidence;
};

}  // namespace stallscope
