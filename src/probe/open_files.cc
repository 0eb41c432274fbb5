// A process's open input files (see open_files.h).
#include "probe/open_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "core/text.h"
#include "probe/diskstats.h"
#include "probe/mounts.h"
#include "probe/remote_path.h"

namespace stallscope {
namespace {

std::optional<uint64_t> Number(std::string_view text, int base) {
  text = Trim(text);
  if (text.empty() || text.size() > 22) return std::nullopt;
  uint64_t v = 0;
  for (char c : text) {
    int d = c >= '0' && c <= '9' ? c - '0' : -1;
    if (d < 0 || d >= base) return std::nullopt;
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  return v;
}

// Descriptors that are not files a loader reads.
bool IsInputPath(std::string_view target) {
  if (target.empty() || target[0] != '/') return false;  // socket:[..], pipe:[..], anon_inode:..
  for (std::string_view skip : {"/dev/", "/proc/", "/sys/", "/memfd:"}) {
    if (target.substr(0, skip.size()) == skip) return false;
  }
  return true;
}

std::string ReadLink(const std::string& path) {
  char buffer[4096];
  ssize_t n = ::readlink(path.c_str(), buffer, sizeof(buffer));
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

std::string Head(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return {};
  std::string head(kInputFormatHeadBytes, '\0');
  // pread: the process's own offset in its descriptor is not this one's.
  ssize_t n = ::pread(fd, head.data(), head.size(), 0);
  ::close(fd);
  head.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return head;
}

// The remote mount holding `target` in the process's mount table, if any.
const MountEntry* RemoteMountOf(const std::vector<MountEntry>& mounts, const std::string& target) {
  const MountEntry* m = FindMountForPath(mounts, target);
  return m != nullptr && IsRemoteMount(*m) ? m : nullptr;
}

// A file on a remote mount recorded without touching it: no size, and the
// format its name suggests.
OpenInput UnstatedRemoteInput(int32_t pid, int fd, const std::string& target, bool deleted,
                              uint64_t position, const MountEntry& mount) {
  OpenInput input;
  input.pid = pid;
  input.fd = fd;
  input.path = target;
  input.deleted = deleted;
  input.position = position;
  input.fs_type = mount.fs_type;
  input.remote = true;
  input.major = mount.major;
  input.minor = mount.minor;
  input.format = InputFormatOf("", target);
  return input;
}

}  // namespace

Result<Fdinfo> ParseFdinfo(std::string_view text, std::string_view source) {
  std::optional<uint64_t> pos, flags;
  for (std::string_view line : SplitLines(text)) {
    if (line.substr(0, 4) == "pos:") pos = Number(line.substr(4), 10);
    if (line.substr(0, 6) == "flags:") flags = Number(line.substr(6), 8);
  }
  if (!pos || !flags || *flags > 0xffffffffull) {
    return Status::ParseError(source, 0, "no numeric pos: and flags: lines");
  }
  return Fdinfo{*pos, static_cast<uint32_t>(*flags)};
}

Result<OpenInputs> ReadOpenInputs(const Root& root, int32_t pid, OpenInputCache* cache,
                                  size_t max_files) {
  const std::string proc = "/proc/" + std::to_string(pid);
  Result<std::vector<std::string>> fds = ListDirectory(root.Path(proc + "/fd"));
  if (!fds.ok()) {
    if (fds.status().code() == Status::Code::kNotFound) {
      return Status::NotFound("pid " + std::to_string(pid));
    }
    return fds.status();
  }
  // The process's own mounts (a container sees its own), read only when a
  // file not in the cache needs them.
  std::optional<std::vector<MountEntry>> mounts;
  auto mounts_of_process = [&]() -> const std::vector<MountEntry>& {
    if (!mounts) {
      mounts.emplace();
      if (Result<std::string> text = ReadFile(root.Path(proc + "/mountinfo")); text.ok()) {
        if (auto parsed = ParseMountinfo(*text, proc + "/mountinfo"); parsed.ok()) {
          *mounts = std::move(*parsed);
        }
      }
    }
    return *mounts;
  };
  OpenInputs out;
  for (const std::string& name : *fds) {
    std::optional<uint64_t> fd = Number(name, 10);
    if (!fd) continue;
    const std::string link = root.Path(proc + "/fd/" + name);
    std::string target = ReadLink(link);
    if (target.empty()) {
      ++out.vanished;
      continue;
    }
    OpenInput input;
    constexpr std::string_view kDeleted = " (deleted)";
    if (EndsWith(target, kDeleted) && target.size() > kDeleted.size()) {
      target.resize(target.size() - kDeleted.size());
      input.deleted = true;
    }
    if (!IsInputPath(target)) {
      ++out.skipped;
      continue;
    }
    Result<std::string> info_text = ReadFile(root.Path(proc + "/fdinfo/" + name), 64 << 10);
    if (!info_text.ok()) {
      ++out.vanished;
      continue;
    }
    Result<Fdinfo> info = ParseFdinfo(*info_text, proc + "/fdinfo/" + name);
    if (!info.ok() || (info->flags & O_ACCMODE) != O_RDONLY) {
      ++out.skipped;  // written (a log, a checkpoint), or unreadable
      continue;
    }
    // The same link (" (deleted)" included) on the same descriptor, open
    // read-only: the same file as last read, its facts kept; only the offset
    // is new (the size is as last read).
    const auto fd_key = std::pair(pid, static_cast<int>(*fd));
    const std::string link_text = input.deleted ? target + std::string(kDeleted) : target;
    if (cache) {
      if (auto seen = cache->by_fd.find(fd_key);
          seen != cache->by_fd.end() && seen->second.target == link_text) {
        ++cache->fd_hits;
        if (!seen->second.input) {
          ++out.skipped;
        } else if (out.files.size() >= max_files) {
          ++out.capped;
        } else {
          OpenInput again = *seen->second.input;
          again.position = info->pos;
          out.files.push_back(std::move(again));
        }
        continue;
      }
    }
    // What this descriptor turns out to be, for the next read.
    auto remember = [&](const OpenInput* kept) {
      if (!cache) return;
      if (cache->by_fd.size() >= cache->max_entries) cache->by_fd.clear();
      cache->by_fd[fd_key] = {link_text, kept ? std::optional<OpenInput>(*kept) : std::nullopt};
    };
    // Live: through the descriptor's link, which reaches the file in the
    // process's mount namespace; a fixture: the target under the root.
    const std::string file = root.IsLive() ? link : root.Path(target);
    struct stat st {};
    std::optional<std::string> head;
    const MountEntry* remote = root.IsLive() ? RemoteMountOf(mounts_of_process(), target) : nullptr;
    if (remote != nullptr) {
      std::optional<RemoteFileFacts> facts;
      if (cache && cache->remote_files) facts = cache->remote_files->Facts(file, target, *remote);
      if (!facts) {
        // Not known yet (a child is asking) or the mount is dead: what /proc says.
        if (out.files.size() >= max_files) {
          ++out.capped;
        } else {
          out.files.push_back(UnstatedRemoteInput(pid, static_cast<int>(*fd), target, input.deleted,
                                                  info->pos, *remote));
        }
        continue;
      }
      st.st_mode = facts->regular ? S_IFREG : S_IFDIR;
      st.st_size = static_cast<off_t>(facts->size);
      st.st_dev = static_cast<dev_t>(facts->dev);
      st.st_ino = static_cast<ino_t>(facts->ino);
      head = std::move(facts->head);
    } else if (::stat(file.c_str(), &st) != 0) {
      ++out.vanished;
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      ++out.skipped;
      remember(nullptr);
      continue;
    }
    if (out.files.size() >= max_files) {
      ++out.capped;
      continue;
    }
    input.pid = pid;
    input.fd = static_cast<int>(*fd);
    input.path = target;
    input.position = info->pos;
    input.size = static_cast<uint64_t>(st.st_size);
    const auto key =
        std::tuple(static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), input.size);
    if (cache) {
      if (auto hit = cache->facts.find(key); hit != cache->facts.end()) {
        ++cache->hits;
        const OpenInputCache::Facts& f = hit->second;
        input.fs_type = f.fs_type;
        input.remote = f.remote;
        input.major = f.major;
        input.minor = f.minor;
        input.device = f.device;
        input.format = f.format;
        remember(&input);
        out.files.push_back(std::move(input));
        continue;
      }
      ++cache->misses;
    }
    input.major = major(st.st_dev);
    input.minor = minor(st.st_dev);
    if (const MountEntry* m = FindMountForPath(mounts_of_process(), target)) {
      input.fs_type = m->fs_type;
      input.remote = IsRemoteFsType(m->fs_type);
      if (!root.IsLive()) {  // a fixture's own files are on this machine's disk
        input.major = m->major;
        input.minor = m->minor;
      }
    }
    if (Result<BlockDevice> dev = ReadBlockDeviceByNumber(root, input.major, input.minor);
        dev.ok()) {
      input.device = dev->name;
    }
    input.format = InputFormatOf(head ? *head : Head(file), target);
    if (cache) {
      if (cache->facts.size() >= cache->max_entries) cache->facts.clear();
      cache->facts[key] = {input.fs_type, input.remote, input.major,
                           input.minor,   input.device, input.format};
    }
    remember(&input);
    out.files.push_back(std::move(input));
  }
  return out;
}

OpenInputSampler::OpenInputSampler(Root root, size_t max_per_sample)
    : root_(std::move(root)), max_per_sample_(max_per_sample) {
  cache_.remote_files = std::make_unique<RemoteFileProber>(RemoteCallDeadlineSeconds());
}

std::vector<OpenInput> OpenInputSampler::Sample(const std::vector<int32_t>& ran) {
  cache_.remote_files->Poll();
  std::vector<std::pair<int64_t, int32_t>> order;  // (last read, pid)
  for (int32_t pid : ran) {
    auto it = last_read_.find(pid);
    order.push_back({it == last_read_.end() ? -1 : it->second, pid});
  }
  std::sort(order.begin(), order.end());
  if (order.size() > max_per_sample_) order.resize(max_per_sample_);
  std::vector<OpenInput> out;
  for (const auto& [last, pid] : order) {
    last_read_[pid] = samples_;
    if (Result<OpenInputs> open = ReadOpenInputs(root_, pid, &cache_); open.ok()) {
      for (OpenInput& f : open->files) out.push_back(std::move(f));
    } else {
      last_read_.erase(pid);  // gone
    }
  }
  // Pids not seen for long are forgotten (bounded like the cache).
  if (last_read_.size() > cache_.max_entries) last_read_.clear();
  ++samples_;
  return out;
}

}  // namespace stallscope
