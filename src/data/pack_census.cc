#include "data/pack_census.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>

#include "data/tar_reader.h"
#include "data/walk.h"

namespace stallscope {
namespace {

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

std::string KindName(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// What one walk thread saw (data/walk.h): the files with their paths
// relative to SRC, and what cannot be packed with the reason. The walk's
// threads each fill their own; TakeSourceCensus merges and sorts them, so
// the census does not depend on the order the threads met the files in.
class PackVisitor : public WalkVisitor {
 public:
  // `prefix`: the walk's root with one '/' at its end.
  PackVisitor(const SourceCensusOptions& options, std::string_view prefix)
      : options_(options), prefix_(prefix) {}

  void File(std::string_view dir, std::string_view name, int, const FileFacts& file) override {
    if (Hidden(name)) return;
    Add(Rel(dir, name), file.size, file.mtime_ns, "");
  }

  bool Directory(std::string_view dir, std::string_view name, int) override {
    if (Hidden(name)) return false;
    if (options_.exclude) {
      struct stat st;
      const std::string path = JoinPath(dir, name);
      if (::lstat(path.c_str(), &st) == 0 && options_.exclude->first == st.st_dev &&
          options_.exclude->second == st.st_ino) {
        return false;
      }
    }
    return true;
  }

  void NotFollowed(std::string_view dir, std::string_view name, int, EntryKind kind) override {
    if (Hidden(name)) return;
    const std::string path = JoinPath(dir, name);
    struct stat st;
    if (kind == EntryKind::kSymlink) {
      // A link to a file is packed as the file (docs/pack-format.md).
      if (::stat(path.c_str(), &st) != 0) {
        Add(Rel(dir, name), 0, 0, fmt::format("symbolic link to nothing: {}", strerror(errno)));
      } else if (S_ISDIR(st.st_mode)) {
        Add(Rel(dir, name), 0, 0, "symbolic link to a folder (not followed)");
      } else if (S_ISREG(st.st_mode)) {
        Add(Rel(dir, name), static_cast<uint64_t>(st.st_size), MtimeNs(st), "");
      } else {
        Add(Rel(dir, name), 0, 0, KindName(st.st_mode));
      }
      return;
    }
    if (::lstat(path.c_str(), &st) != 0) {
      Add(Rel(dir, name), 0, 0, fmt::format("cannot stat: {}", strerror(errno)));
    } else {
      Add(Rel(dir, name), 0, 0, KindName(st.st_mode));
    }
  }

  // A folder that could not be opened or read, or an entry that could not
  // be stat'ed: kept with the reason, under its path relative to SRC.
  void Unreadable(std::string_view path, int err) override {
    const size_t slash = path.rfind('/');
    if (Hidden(slash == std::string_view::npos ? path : path.substr(slash + 1))) return;
    struct stat st;
    const bool folder = ::lstat(std::string(path).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
    Add(std::string(Rel(path)), 0, 0,
        fmt::format("{}: {}", folder ? "folder cannot be opened" : "cannot stat", strerror(err)));
  }

  std::vector<SourceFile> files;
  uint64_t hidden_skipped = 0;

 private:
  bool Hidden(std::string_view name) {
    if (name.empty() || name[0] != '.') return false;
    ++hidden_skipped;
    return true;
  }
  std::string_view Rel(std::string_view path) const {
    return path.size() > prefix_.size() ? path.substr(prefix_.size()) : std::string_view{};
  }
  std::string Rel(std::string_view dir, std::string_view name) const {
    std::string_view rel_dir = Rel(dir);
    std::string out;
    out.reserve(rel_dir.size() + 1 + name.size());
    if (!rel_dir.empty()) (out += rel_dir) += '/';
    out += name;
    return out;
  }
  void Add(std::string path, uint64_t size, int64_t mtime_ns, std::string problem) {
    SourceFile f;
    f.path = std::move(path);
    f.size = size;
    f.mtime_ns = mtime_ns;
    f.problem = std::move(problem);
    files.push_back(std::move(f));
  }

  const SourceCensusOptions& options_;
  std::string_view prefix_;
};

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

Result<SourceCensus> TakeSourceCensus(const SourceCensusOptions& options) {
  SourceCensus census;
  // SRC itself may be a link to a folder: opened as open(2) follows it, and
  // walked as "SRC/" (the walk follows no link of its own).
  int fd = ::open(options.src.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(options.src, errno);
  ::close(fd);
  std::string root = options.src;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.back() != '/') root += '/';

  std::vector<std::unique_ptr<PackVisitor>> visitors;
  std::vector<WalkVisitor*> pointers;
  for (int i = 0; i < DefaultWalkThreads(); ++i) {
    visitors.push_back(std::make_unique<PackVisitor>(options, root));
    pointers.push_back(visitors.back().get());
  }
  if (Status s = Walk(root, pointers); !s.ok()) return s;
  std::vector<SourceFile> files;
  size_t total = 0;
  for (const auto& v : visitors) total += v->files.size();
  files.reserve(total);
  for (const auto& v : visitors) {
    census.hidden_skipped += v->hidden_skipped;
    std::move(v->files.begin(), v->files.end(), std::back_inserter(files));
  }

  // Samples by key, in byte order of (key, extension); the path breaks the
  // one tie ("a/b" and "a/b." share key and extension).
  auto key_of = [](const SourceFile& f) { return SplitKey(f.path); };
  std::sort(files.begin(), files.end(), [&](const SourceFile& a, const SourceFile& b) {
    auto ka = key_of(a), kb = key_of(b);
    return ka != kb ? ka < kb : a.path < b.path;
  });

  bool class_folders = !files.empty();
  for (const SourceFile& f : files)
    class_folders = class_folders && std::count(f.path.begin(), f.path.end(), '/') == 1;
  std::map<std::string, int64_t> class_index;
  if (class_folders) {
    for (const SourceFile& f : files) class_index.emplace(f.path.substr(0, f.path.find('/')), 0);
    int64_t i = 0;
    for (auto& [name, index] : class_index) {
      index = i++;
      census.classes.push_back(name);
    }
  }

  for (SourceFile& f : files) {
    std::string key(key_of(f).first);
    if (census.samples.empty() || census.samples.back().key != key) {
      SourceSample s;
      s.key = key;
      if (class_folders) s.label = class_index.at(f.path.substr(0, f.path.find('/')));
      census.samples.push_back(std::move(s));
    }
    SourceSample& s = census.samples.back();
    s.bytes += f.size;
    census.bytes += f.size;
    ++census.files;
    s.files.push_back(std::move(f));
  }
  return census;
}

void ShuffleSamples(std::vector<SourceSample>& samples, uint64_t seed) {
  uint64_t state = seed;
  for (size_t i = samples.size(); i > 1; --i) {
    // Rejection sampling: an unbiased index in [0, i).
    uint64_t bound = static_cast<uint64_t>(i);
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t r;
    do r = SplitMix64(state);
    while (r >= limit);
    std::swap(samples[i - 1], samples[r % bound]);
  }
}

}  // namespace stallscope
