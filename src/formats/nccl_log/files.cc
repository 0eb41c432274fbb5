// NCCL log files read for doctor and run (see files.h).
#include "formats/nccl_log/files.h"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>

#include "core/file.h"
#include "core/host_clock.h"
#include "formats/nccl_log/nccl_log.h"
#include "probe/infiniband.h"

namespace stallscope {
std::string ShortHostname(const Root& root) {
  std::string name;
  if (auto h = ReadAttribute(root.Path("/proc/sys/kernel/hostname")); h.ok()) name = *h;
  if (name.empty() && root.IsLive()) name = HostName();
  return name.substr(0, name.find('.'));  // NCCL prints the name up to the first '.'
}

std::optional<HostRdmaPorts> ReadHostRdma(const Root& root, std::vector<std::string>& notes) {
  Result<std::vector<InfinibandDevice>> devices = ReadInfinibandDevices(root);
  if (!devices.ok()) {
    notes.push_back("RDMA ports not read: " + devices.status().message());
    return std::nullopt;
  }
  HostRdmaPorts host;
  host.hostname = ShortHostname(root);
  for (const InfinibandDevice& d : *devices) {
    for (const InfinibandPort& p : d.ports) {
      if (!p.state || p.state->name != "ACTIVE") continue;
      host.active_ports.push_back(d.name + ":" + std::to_string(p.port) + " " +
                                  (p.link_layer.empty() ? "?" : p.link_layer) +
                                  (p.rate ? " " + p.rate->text : ""));
    }
  }
  return host;
}

Result<NcclLogFile> ReadNcclLogFile(const std::string& path, std::string_view flag) {
  std::string what = std::string(flag) + (flag.empty() ? "" : " ") + path;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(what + ": cannot open it", errno);
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return Status::InvalidArgument(what + ": is a directory, not an NCCL log");
  }
  NcclLineMarks marks;
  Result<NcclLogSummary> summary =
      ReadNcclLog(fd, what, [&](std::string_view chunk) { marks.Feed(chunk); });
  close(fd);
  if (!summary.ok()) return summary.status();
  NcclLogFile log;
  log.path = path;
  log.summary = std::move(*summary);
  log.first_socket_line = marks.first_socket_line();
  log.first_ib_line = marks.first_ib_line();
  return log;
}

std::string NcclDebugFileGlob(std::string_view pattern, std::string_view hostname) {
  auto literal = [](std::string& out, std::string_view text) {
    for (char c : text) {
      if (c == '*' || c == '?' || c == '[' || c == '\\') out += '\\';
      out += c;
    }
  };
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'h') {
      literal(out, hostname);
      ++i;
    } else if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'p') {
      out += "[0-9]*";
      ++i;
    } else {
      literal(out, pattern.substr(i, 1));
    }
  }
  return out;
}

std::vector<DebugFileState> ListNcclDebugFiles(std::string_view pattern,
                                               std::string_view hostname) {
  std::vector<DebugFileState> out;
  std::string g = NcclDebugFileGlob(pattern, hostname);
  glob_t found{};
  if (glob(g.c_str(), 0, nullptr, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc; ++i) {
      struct stat st;
      if (stat(found.gl_pathv[i], &st) != 0 || !S_ISREG(st.st_mode)) continue;
      out.push_back({found.gl_pathv[i], static_cast<uint64_t>(st.st_ino),
                     static_cast<uint64_t>(st.st_size),
                     int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec});
    }
  }
  globfree(&found);
  std::sort(out.begin(), out.end(),
            [](const DebugFileState& a, const DebugFileState& b) { return a.path < b.path; });
  return out;
}

std::vector<std::string> DebugFilesWritten(const std::vector<DebugFileState>& before,
                                           const std::vector<DebugFileState>& after) {
  std::map<std::string_view, const DebugFileState*> old;
  for (const DebugFileState& f : before) old[f.path] = &f;
  std::vector<std::string> out;
  for (const DebugFileState& f : after) {
    auto was = old.find(f.path);
    if (was == old.end() || was->second->inode != f.inode || was->second->size != f.size ||
        was->second->mtime_ns != f.mtime_ns) {
      out.push_back(f.path);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace stallscope
