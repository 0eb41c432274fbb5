#include "capture/node_recorder.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>

#include "core/text.h"
#include "sample/environment.h"

namespace stallscope {
namespace {

// Files of /proc/PID/ (and /proc/self/) that may hold a secret, a command
// line, another process's memory or its open files: never captured.
constexpr std::string_view kNeverInCapture[] = {
    "cmdline",  "environ", "mem",  "maps",   "smaps",     "pagemap", "auxv",
    "stack",    "syscall", "fd",   "fdinfo", "map_files", "kcore",   "kmsg",
    "kallsyms", "cwd",     "root", "exe",    "mountstats"};

// The parts of "/a/b/c": {"a", "b", "c"}.
std::vector<std::string> Parts(std::string_view path) {
  std::vector<std::string> out;
  for (std::string_view rest = path; !rest.empty();) {
    size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    if (!part.empty() && part != ".") out.emplace_back(part);
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  return out;
}

std::string Joined(const std::vector<std::string>& parts, size_t count) {
  std::string out;
  for (size_t i = 0; i < count && i < parts.size(); ++i) out += "/" + parts[i];
  return out.empty() ? "/" : out;
}

// The training variables of a NUL-separated environ block, the rest dropped.
std::string TrainingVariablesOnly(std::string_view block) {
  std::string out;
  for (std::string_view rest = block; !rest.empty();) {
    size_t end = rest.find('\0');
    std::string_view entry = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    size_t equals = entry.find('=');
    if (equals != std::string_view::npos && IsTrainingVariable(entry.substr(0, equals))) {
      out += entry;
      out += '\0';
    }
  }
  return out;
}

// The relative link from the directory `from` to `to` (both absolute
// inside the capture).
std::string RelativeLink(const std::vector<std::string>& from, const std::vector<std::string>& to) {
  size_t common = 0;
  while (common < from.size() && common < to.size() && from[common] == to[common]) ++common;
  std::string out;
  for (size_t i = common; i < from.size(); ++i) out += "../";
  for (size_t i = common; i < to.size(); ++i) out += to[i] + "/";
  if (out.empty()) return ".";
  out.pop_back();
  return out;
}

}  // namespace

bool AllowedInCapture(std::string_view path) {
  if (path == "/dev/kmsg" || path == "/stallscope/nvml.json" ||
      path == "/stallscope/addresses.json" || path == "/proc/self/environ" ||
      path == "/.dockerenv" || path == "/run/.containerenv") {
    return true;
  }
  std::vector<std::string> parts = Parts(path);
  if (parts.empty()) return false;
  if (parts[0] == "ethtool") return parts.size() <= 2;
  if (parts[0] != "proc" && parts[0] != "sys") return false;
  if (parts[0] == "proc") {
    for (const std::string& part : parts) {
      for (std::string_view never : kNeverInCapture) {
        if (part == never) return false;
      }
    }
  }
  return true;
}

NodeRecorder::NodeRecorder(Root root) : root_(std::move(root)) {
  if (char* real = ::realpath(root_.dir().c_str(), nullptr)) {
    real_dir_ = real;
    ::free(real);
  }
}

std::string NodeRecorder::UnderRoot(const std::string& path) const {
  if (root_.IsLive()) return path.empty() || path.front() != '/' ? "" : path;
  // A probe names a file by the root's directory as given, a descriptor's
  // path (probe/proc_file.cc) by the resolved one.
  for (const std::string& dir : {root_.dir(), real_dir_}) {
    if (dir.empty() || !StartsWith(path, dir)) continue;
    if (path.size() > dir.size() && path[dir.size()] != '/') continue;
    std::string inside = path.substr(dir.size());
    return inside.empty() ? "/" : inside;
  }
  return "";
}

std::string NodeRecorder::FollowLinks(const std::string& inside) {
  std::vector<std::string> parts = Parts(inside);
  for (int hops = 0; hops < 40;) {
    bool moved = false;
    for (size_t i = 1; i <= parts.size(); ++i) {
      const std::string prefix = Joined(parts, i);
      // /proc/self is the capturing process: kept as a directory of its own.
      if (prefix == "/proc/self" || prefix == "/proc/thread-self") continue;
      struct stat st;
      if (::lstat(root_.Path(prefix).c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) continue;
      std::array<char, PATH_MAX> buffer;
      ssize_t n = ::readlink(root_.Path(prefix).c_str(), buffer.data(), buffer.size() - 1);
      if (n <= 0) return "";
      std::string target(buffer.data(), static_cast<size_t>(n));
      std::vector<std::string> resolved;
      if (target.front() != '/') resolved.assign(parts.begin(), parts.begin() + (i - 1));
      for (const std::string& part : Parts(target)) {
        if (part != "..") {
          resolved.push_back(part);
        } else if (resolved.empty()) {
          return "";  // above the root
        } else {
          resolved.pop_back();
        }
      }
      std::vector<std::string> dir(parts.begin(), parts.begin() + (i - 1));
      Keep(prefix, CaptureEntry::Kind::kLink, RelativeLink(dir, resolved));
      for (size_t j = i; j < parts.size(); ++j) resolved.push_back(parts[j]);
      parts = std::move(resolved);
      moved = true;
      ++hops;
      break;
    }
    if (!moved) return Joined(parts, parts.size());
  }
  return "";
}

void NodeRecorder::Keep(const std::string& inside, CaptureEntry::Kind kind, std::string data) {
  if (!AllowedInCapture(inside)) {
    left_out_.insert(inside);
    return;
  }
  std::string key = tree_ + inside;
  CaptureEntry& entry = kept_[key];
  // A path seen as a link stays one: the file lives at the link's target.
  if (entry.kind == CaptureEntry::Kind::kLink && !entry.path.empty() &&
      kind != CaptureEntry::Kind::kLink) {
    return;
  }
  entry.path = key;
  entry.kind = kind;
  entry.data = std::move(data);
}

void NodeRecorder::NoteFile(const std::string& path, std::string_view text) {
  std::string inside = UnderRoot(path);
  if (inside.empty()) return;
  inside = FollowLinks(inside);
  if (inside.empty()) return;
  if (inside == "/proc/self/environ") {
    Keep(inside, CaptureEntry::Kind::kFile, TrainingVariablesOnly(text));
    return;
  }
  Keep(inside, CaptureEntry::Kind::kFile, std::string(text));
}

void NodeRecorder::NoteDirectory(const std::string& path) {
  std::string inside = UnderRoot(path);
  if (inside.empty() || inside == "/") return;
  inside = FollowLinks(inside);
  if (!inside.empty() && inside != "/") Keep(inside, CaptureEntry::Kind::kDirectory, "");
}

void NodeRecorder::NoteLinks(const std::string& path) {
  std::string inside = UnderRoot(path);
  if (inside.empty()) return;
  inside = FollowLinks(inside);
  if (inside.empty() || inside == "/") return;
  struct stat st;
  if (::stat(root_.Path(inside).c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    Keep(inside, CaptureEntry::Kind::kDirectory, "");
  } else if (S_ISREG(st.st_mode) && !kept_.count(tree_ + inside)) {
    Result<std::string> text = ReadFile(root_.Path(inside), 1 << 20);
    if (text.ok()) Keep(inside, CaptureEntry::Kind::kFile, std::move(*text));
  }
}

void NodeRecorder::NoteWritten(const std::string& path, std::string_view text) {
  const bool append = !path.empty() && path.back() == '+';
  const std::string inside = append ? path.substr(0, path.size() - 1) : path;
  auto it = kept_.find(tree_ + inside);
  if (append && it != kept_.end() && it->second.kind == CaptureEntry::Kind::kFile) {
    it->second.data.append(text);
    return;
  }
  Keep(inside, CaptureEntry::Kind::kFile, std::string(text));
}

std::vector<CaptureEntry> NodeRecorder::Entries() const {
  // Every parent directory first, so that a reader can create the trees in order.
  std::map<std::string, CaptureEntry> all = kept_;
  // What the first sample's time read and the second did not read again
  // (the host's name, a GPU's NUMA node) is the node's too.
  for (const auto& [key, entry] : kept_) {
    if (key.rfind("before/", 0) != 0) continue;
    std::string node_key = "node/" + key.substr(7);
    if (all.count(node_key)) continue;
    CaptureEntry copy = entry;
    copy.path = node_key;
    all[node_key] = std::move(copy);
  }
  for (const auto& [key, entry] : std::map<std::string, CaptureEntry>(all)) {
    for (size_t slash = key.find('/'); slash != std::string::npos;
         slash = key.find('/', slash + 1)) {
      std::string dir = key.substr(0, slash);
      auto it = all.find(dir);
      if (it == all.end()) all[dir] = CaptureEntry{dir, CaptureEntry::Kind::kDirectory, ""};
    }
  }
  std::vector<CaptureEntry> out;
  for (auto& [key, entry] : all) out.push_back(std::move(entry));
  return out;
}

}  // namespace stallscope
