#include "data/pack_census.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "data/tar_reader.h"

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

class Walker {
 public:
  Walker(const SourceCensusOptions& options, SourceCensus& census)
      : options_(options), census_(census) {}

  Status Walk(int dirfd, const std::string& rel) {
    DIR* dir = fdopendir(dirfd);
    if (!dir) {
      int err = errno;
      ::close(dirfd);
      return Status::FromErrno(Display(rel), err);
    }
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* d = readdir(dir)) {
      std::string name = d->d_name;
      if (name == "." || name == "..") continue;
      if (name[0] == '.') {
        ++census_.hidden_skipped;
        continue;
      }
      names.push_back(std::move(name));
    }
    if (errno != 0) {
      int err = errno;
      closedir(dir);
      return Status::FromErrno(Display(rel), err);
    }
    std::sort(names.begin(), names.end());
    Status result;
    for (const std::string& name : names) {
      std::string path = rel.empty() ? name : rel + "/" + name;
      struct stat st;
      if (fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        Add(path, {}, fmt::format("cannot stat: {}", strerror(errno)));
        continue;
      }
      if (S_ISLNK(st.st_mode)) {
        if (fstatat(dirfd, name.c_str(), &st, 0) != 0) {
          Add(path, {}, fmt::format("symbolic link to nothing: {}", strerror(errno)));
          continue;
        }
        if (S_ISDIR(st.st_mode)) {
          Add(path, {}, "symbolic link to a folder (not followed)");
          continue;
        }
      }
      if (S_ISDIR(st.st_mode)) {
        if (options_.exclude && options_.exclude->first == st.st_dev &&
            options_.exclude->second == st.st_ino)
          continue;
        int sub = openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (sub < 0) {
          Add(path, {}, fmt::format("folder cannot be opened: {}", strerror(errno)));
          continue;
        }
        if (Status s = Walk(sub, path); !s.ok()) {
          result = s;
          break;
        }
        continue;
      }
      Add(path, st, S_ISREG(st.st_mode) ? "" : KindName(st.st_mode));
    }
    closedir(dir);
    return result;
  }

  std::vector<SourceFile> files;

 private:
  std::string Display(const std::string& rel) const {
    return rel.empty() ? options_.src : options_.src + "/" + rel;
  }
  void Add(std::string path, const struct stat& st, std::string problem) {
    SourceFile f;
    f.path = std::move(path);
    if (problem.empty()) {
      f.size = static_cast<uint64_t>(st.st_size);
      f.mtime_ns = MtimeNs(st);
    }
    f.problem = std::move(problem);
    files.push_back(std::move(f));
  }

  const SourceCensusOptions& options_;
  SourceCensus& census_;
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
  int fd = ::open(options.src.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(options.src, errno);
  Walker walker(options, census);
  if (Status s = walker.Walk(fd, ""); !s.ok()) return s;

  // Samples by key, in byte order of (key, extension).
  std::vector<SourceFile>& files = walker.files;
  auto key_of = [](const SourceFile& f) { return SplitKey(f.path); };
  std::sort(files.begin(), files.end(),
            [&](const SourceFile& a, const SourceFile& b) { return key_of(a) < key_of(b); });

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
