#include "probe/remote_file_facts.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <utility>

#include "probe/remote_path.h"
#include "sample/input_format.h"

namespace stallscope {
namespace {

constexpr size_t kMostAnswersKept = 1024;

// The child: a stat and a read of the head. Its answer: "regular size dev
// ino\n" and the head's bytes; exit code 1 when the stat failed. The step
// texts are made before the fork; the child calls stat, open, pread and
// close, and allocates only its answer (glibc's fork leaves malloc usable;
// no stdio, locale or strerror: core/child_call.h).
struct FileAsk {
  std::string file;
  std::string stat_step;
  std::string read_step;
};

ChildAnswer AskFile(const FileAsk& ask, const ChildProgress& p) {
  p.Step(ask.stat_step);
  struct stat st {};
  if (::stat(ask.file.c_str(), &st) != 0) return {1, "", ""};
  std::string out = std::to_string(S_ISREG(st.st_mode) ? 1 : 0) + " " +
                    std::to_string(static_cast<uint64_t>(st.st_size)) + " " +
                    std::to_string(static_cast<uint64_t>(st.st_dev)) + " " +
                    std::to_string(static_cast<uint64_t>(st.st_ino)) + "\n";
  if (!S_ISREG(st.st_mode)) return {0, out, ""};
  p.Step(ask.read_step);
  const int fd = ::open(ask.file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd >= 0) {
    char head[kInputFormatHeadBytes];
    const ssize_t n = ::pread(fd, head, sizeof head, 0);
    if (n > 0) out.append(head, static_cast<size_t>(n));
    ::close(fd);
  }
  return {0, out, ""};
}

std::optional<RemoteFileFacts> ParseAnswer(const ChildAnswer& a) {
  if (a.exit_code != 0) return std::nullopt;
  const size_t line = a.out.find('\n');
  if (line == std::string::npos) return std::nullopt;
  RemoteFileFacts f;
  int regular = 0;
  unsigned long long size = 0, dev = 0, ino = 0;
  if (std::sscanf(a.out.substr(0, line).c_str(), "%d %llu %llu %llu", &regular, &size, &dev,
                  &ino) != 4) {
    return std::nullopt;
  }
  f.regular = regular != 0;
  f.size = size;
  f.dev = dev;
  f.ino = ino;
  f.head = a.out.substr(line + 1);
  return f;
}

}  // namespace

void RemoteFileProber::Poll() {
  for (auto it = running_.begin(); it != running_.end();) {
    std::optional<Result<ChildAnswer>> done = it->second.call.Poll(deadline_);
    if (!done) {
      ++it;
      continue;
    }
    if (done->ok()) {
      // Answers nobody came back for (the process ended) are dropped past a bound.
      if (answered_.size() >= kMostAnswersKept) answered_.clear();
      if (std::optional<RemoteFileFacts> f = ParseAnswer(**done)) answered_[it->first] = *f;
    } else if (it->second.call.pid() > 0) {  // given up: stuck on the mount
      abandoned_.push_back(std::move(it->second.call));
      if (dead_mounts_.insert(it->second.mount_point).second) {
        notes_.push_back(fmt::format(
            "io: no answer from the {} within {:.0f} s to the {}: the sizes and formats of the "
            "job's files on it are missing from then on; the file server or the link to it may "
            "be down",
            it->second.mount_text, deadline_, done->status().message()));
      }
    }
    it = running_.erase(it);
  }
  for (auto it = abandoned_.begin(); it != abandoned_.end();) {
    it = it->ReapIfEnded() ? abandoned_.erase(it) : it + 1;
  }
}

std::optional<RemoteFileFacts> RemoteFileProber::Facts(const std::string& file,
                                                       const std::string& shown,
                                                       const MountEntry& mount) {
  // A descriptor's link (/proc/PID/fd/N) names another file once reused.
  const std::string key = file + '\n' + shown;
  if (auto known = answered_.find(key); known != answered_.end()) {
    RemoteFileFacts f = std::move(known->second);
    answered_.erase(known);
    return f;
  }
  if (dead_mounts_.count(mount.mount_point) || running_.count(key) || children() >= max_children_) {
    return std::nullopt;
  }
  const FileAsk ask{file, "stat of " + shown, "open/read of " + shown};
  Result<ChildCall> call =
      ChildCall::Start([&](const ChildProgress& p) { return AskFile(ask, p); });
  if (call.ok()) {
    running_.emplace(key, Running{std::move(*call), mount.mount_point, DescribeMount(mount)});
  }
  return std::nullopt;
}

std::vector<std::string> RemoteFileProber::TakeNotes() { return std::exchange(notes_, {}); }

}  // namespace stallscope
