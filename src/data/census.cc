#include "data/census.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>

#include "core/file.h"
#include "core/threads.h"
#include "data/fs_magic.h"
#include "data/residency.h"
#include "data/walk.h"
#include "probe/mounts.h"

namespace stallscope {
namespace {

// A loader's fetch of a sampled file reads at most this much of it.
constexpr size_t kFetchBytes = 1 << 20;

using Clock = std::chrono::steady_clock;

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string Join(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (out.empty() || out.back() != '/') out += '/';
  out += name;
  return out;
}

// A file drawn into the sample: each file gets a random key and the sample is
// the `capacity` smallest keys over all workers, a uniform sample without
// replacement however the files were spread over the workers.
struct SampledFile {
  uint64_t key = 0;
  std::string path;
};

bool KeyLess(const SampledFile& a, const SampledFile& b) { return a.key < b.key; }

class CensusVisitor : public WalkVisitor {
 public:
  CensusVisitor(uint64_t seed, size_t sample_capacity, size_t examples,
                const std::function<void()>* advance = nullptr)
      : rng_state_(seed), capacity_(sample_capacity), max_examples_(examples), advance_(advance) {}

  void File(std::string_view dir, std::string_view name, int depth,
            const FileFacts& file) override {
    Advance();
    const uint64_t size = file.size;
    ++files;
    bytes += size;
    empty_files += size == 0;
    largest = std::max(largest, size);
    SizeBucket& bucket = histogram[SizeBucketOf(size)];
    ++bucket.files;
    bucket.bytes += size;
    Deeper(dir, name, depth);
    if (capacity_ == 0) return;
    const uint64_t key = SplitMix64(rng_state_);
    if (sample.size() < capacity_) {
      sample.push_back(SampledFile{key, Join(dir, name)});
      std::push_heap(sample.begin(), sample.end(), KeyLess);
    } else if (key < sample.front().key) {
      std::pop_heap(sample.begin(), sample.end(), KeyLess);
      sample.back() = SampledFile{key, Join(dir, name)};
      std::push_heap(sample.begin(), sample.end(), KeyLess);
    }
  }

  bool Directory(std::string_view dir, std::string_view name, int depth) override {
    Advance();
    ++directories;
    Deeper(dir, name, depth);
    return true;
  }

  void NotFollowed(std::string_view dir, std::string_view name, int depth,
                   EntryKind kind) override {
    Advance();
    if (kind == EntryKind::kSymlink) {
      ++symlinks;
    } else {
      ++other;
    }
    Deeper(dir, name, depth);
  }

  void Unreadable(std::string_view path, int err) override {
    Advance();  // an error is an answer too
    ++unreadable;
    if (examples.size() < max_examples_) {
      examples.push_back(std::string(path) + ": " + std::strerror(err));
    }
  }

  uint64_t files = 0, bytes = 0, empty_files = 0, largest = 0, directories = 0, symlinks = 0,
           other = 0, unreadable = 0;
  std::array<SizeBucket, kSizeBuckets> histogram{};
  int max_depth = 0;
  std::string deepest;
  std::vector<std::string> examples;
  std::vector<SampledFile> sample;  // a max-heap on key

 private:
  void Advance() const {
    if (advance_ != nullptr && *advance_) (*advance_)();
  }

  void Deeper(std::string_view dir, std::string_view name, int depth) {
    if (depth <= max_depth) return;
    max_depth = depth;
    deepest = Join(dir, name);
  }

  uint64_t rng_state_;
  size_t capacity_;
  size_t max_examples_;
  const std::function<void()>* advance_;
};

double Percentile(std::vector<double>& values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  // Nearest rank: the smallest value with at least q of the values at or below it.
  size_t rank = static_cast<size_t>(q * static_cast<double>(values.size()) + 0.999999);
  rank = std::clamp<size_t>(rank, 1, values.size());
  return values[rank - 1];
}

// `fetch` (remote mounts only: a local disk's page cache is left as found):
// each file is also fetched as a loader does, open + read + close.
MetadataLatency MeasureLatency(const std::vector<std::string>& paths, size_t limit,
                               double budget_seconds, bool fetch,
                               const std::function<void()>& advance) {
  std::vector<double> stat_us, open_us, fetch_us;
  std::vector<char> buffer(kFetchBytes);
  const Clock::time_point deadline =
      Clock::now() +
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(budget_seconds));
  for (size_t i = 0; i < paths.size() && i < limit; ++i) {
    if (i > 0 && Clock::now() > deadline) break;
    struct stat st {};
    Clock::time_point t0 = Clock::now();
    const int stat_rc = ::lstat(paths[i].c_str(), &st);
    Clock::time_point t1 = Clock::now();
    const int fd = ::open(paths[i].c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
    Clock::time_point t2 = Clock::now();
    if (advance) advance();
    // Again as a loader fetches it: open, read, close (the open is a second
    // round trip, as the loader's own would be).
    const int fetch_fd = fetch ? ::open(paths[i].c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (fetch_fd >= 0) {
      for (size_t got = 0; got < kFetchBytes;) {
        ssize_t n = ::read(fetch_fd, buffer.data() + got, kFetchBytes - got);
        if (n > 0) {
          got += static_cast<size_t>(n);
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        break;
      }
      ::close(fetch_fd);
      fetch_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t2).count());
    }
    if (advance) advance();
    if (stat_rc == 0) stat_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    if (fd >= 0) open_us.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
  }
  MetadataLatency out;
  out.files = std::max(stat_us.size(), open_us.size());
  out.stat_p50_us = Percentile(stat_us, 0.50);
  out.stat_p99_us = Percentile(stat_us, 0.99);
  out.open_p50_us = Percentile(open_us, 0.50);
  out.open_p99_us = Percentile(open_us, 0.99);
  out.fetch_p50_us = Percentile(fetch_us, 0.50);
  out.fetch_p99_us = Percentile(fetch_us, 0.99);
  return out;
}

ResidencyCensus MeasureSampleResidency(const std::vector<std::string>& paths, int threads,
                                       const std::function<void()>& advance) {
  struct Partial {
    uint64_t checked = 0, failed = 0, bytes = 0, resident = 0;
    std::string first_error;
  };
  const size_t workers = std::clamp<size_t>(paths.size() / 64, 1, std::max(1, threads));
  std::vector<Partial> partials(workers);
  std::atomic<size_t> next{0};
  auto work = [&](Partial* p) {
    for (size_t i = next++; i < paths.size(); i = next++) {
      Result<FileResidency> r = MeasureResidency(paths[i]);
      if (advance) advance();
      if (!r.ok()) {
        if (r.status().IsNotFound()) continue;  // deleted since the walk
        ++p->failed;
        if (p->first_error.empty()) p->first_error = r.status().message();
        continue;
      }
      ++p->checked;
      p->bytes += r->size_bytes;
      p->resident += r->resident_bytes;
    }
  };
  RunOnThreads(workers, [&](size_t i) { work(&partials[i]); });
  ResidencyCensus out;
  for (const Partial& p : partials) {
    out.files_checked += p.checked;
    out.files_failed += p.failed;
    out.bytes_checked += p.bytes;
    out.resident_bytes += p.resident;
    if (out.first_error.empty()) out.first_error = p.first_error;
  }
  out.resident_fraction = out.bytes_checked == 0 ? 0
                                                 : static_cast<double>(out.resident_bytes) /
                                                       static_cast<double>(out.bytes_checked);
  return out;
}

void DescribeFileSystem(DatasetCensus& c) {
  Result<PathDevice> device = DeviceForPath(Root("/"), c.resolved_path);
  if (device.ok()) {
    c.fs_type = device->fs_type;
    c.mount_point = device->mount.mount_point;
    c.source = device->source;
    c.mount_options = device->mount.mount_options + "," + device->mount.super_options;
    c.device = device->device;
    c.disk = device->disk;
    c.backing_disks = device->backing_disks;
    c.remote = device->remote;
    c.statfs_type = device->statfs_type;
  } else {
    c.notes.push_back("mount table: " + device.status().message());
  }
  if (!c.statfs_type) {
    struct statfs fs {};
    if (::statfs(c.resolved_path.c_str(), &fs) == 0) {
      c.statfs_type = static_cast<int64_t>(fs.f_type);
    } else {
      c.notes.push_back("statfs " + c.resolved_path + ": " + std::strerror(errno));
    }
  }
  if (c.statfs_type) {
    c.statfs_name = std::string(FsMagicName(*c.statfs_type));
    c.remote = c.remote || IsRemoteFsMagic(*c.statfs_type);
    if (c.fs_type.empty()) c.fs_type = c.statfs_name;
  }
}

}  // namespace

Result<DatasetCensus> TakeCensus(const std::string& path, const CensusOptions& options) {
  if (path.empty()) return Status::InvalidArgument("empty dataset path");
  const auto step = [&](const std::string& what) {
    if (options.step) options.step(what);
  };
  DatasetCensus c;
  c.path = path;
  step("stat of " + path);
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return Status::FromErrno(path, errno);
  c.resolved_path = resolved;
  std::free(resolved);
  struct stat st {};
  if (::stat(c.resolved_path.c_str(), &st) != 0) return Status::FromErrno(path, errno);
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(path + ": neither a directory nor a regular file");
  }

  uint64_t seed = options.seed;
  if (seed == 0)
    seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  const size_t capacity = options.residency_sample_files;
  std::vector<SampledFile> sample;

  const Clock::time_point start = Clock::now();
  if (S_ISREG(st.st_mode)) {
    c.threads = 1;
    CensusVisitor one(seed, capacity, options.unreadable_examples, &options.advance);
    const size_t slash = c.resolved_path.rfind('/');
    one.File(c.resolved_path.substr(0, std::max<size_t>(slash, 1)),
             c.resolved_path.substr(slash + 1), 0, FileFacts{static_cast<uint64_t>(st.st_size), 0});
    c.files = 1;
    c.bytes = one.bytes;
    c.empty_files = one.empty_files;
    c.largest_file_bytes = one.largest;
    c.histogram = one.histogram;
    c.deepest_path = c.resolved_path;
    sample = std::move(one.sample);
  } else {
    c.threads = options.threads > 0 ? options.threads : DefaultWalkThreads();
    std::vector<std::unique_ptr<CensusVisitor>> visitors;
    std::vector<WalkVisitor*> pointers;
    for (int i = 0; i < c.threads; ++i) {
      visitors.push_back(
          std::make_unique<CensusVisitor>(seed + static_cast<uint64_t>(i) * 0x100000001B3ull,
                                          capacity, options.unreadable_examples, &options.advance));
      pointers.push_back(visitors.back().get());
    }
    step("readdir/stat of the walk of " + c.resolved_path);
    Status walked = Walk(c.resolved_path, pointers);
    if (!walked.ok()) return walked;
    for (const auto& v : visitors) {
      c.files += v->files;
      c.bytes += v->bytes;
      c.empty_files += v->empty_files;
      c.largest_file_bytes = std::max(c.largest_file_bytes, v->largest);
      c.directories += v->directories;
      c.symlinks += v->symlinks;
      c.other_entries += v->other;
      c.unreadable += v->unreadable;
      for (size_t b = 0; b < kSizeBuckets; ++b) {
        c.histogram[b].files += v->histogram[b].files;
        c.histogram[b].bytes += v->histogram[b].bytes;
      }
      if (v->max_depth > c.max_depth) {
        c.max_depth = v->max_depth;
        c.deepest_path = v->deepest;
      }
      for (std::string& e : v->examples) {
        if (c.unreadable_examples.size() < options.unreadable_examples) {
          c.unreadable_examples.push_back(std::move(e));
        }
      }
      for (SampledFile& f : v->sample) sample.push_back(std::move(f));
    }
  }
  c.walk_seconds = std::chrono::duration<double>(Clock::now() - start).count();

  // The global sample: the smallest keys of the union, in key order (random).
  std::sort(sample.begin(), sample.end(), KeyLess);
  if (sample.size() > capacity) sample.resize(capacity);
  std::vector<std::string> paths;
  paths.reserve(sample.size());
  for (SampledFile& f : sample) paths.push_back(std::move(f.path));

  step("statfs of " + c.resolved_path);
  DescribeFileSystem(c);
  step("open/mmap of the sampled files under " + c.resolved_path);
  c.residency = MeasureSampleResidency(paths, c.threads, options.advance);
  c.residency.sampled = c.files > paths.size();
  if (c.residency.files_failed > 0) {
    c.notes.push_back("page-cache residency: " + std::to_string(c.residency.files_failed) +
                      " file(s) could not be mapped, first: " + c.residency.first_error);
  }
  if (!paths.empty()) {
    step("open/stat of the sampled files under " + c.resolved_path);
    c.latency = MeasureLatency(paths, options.latency_sample_files, options.latency_budget_seconds,
                               c.remote, options.advance);
  }
  if (c.unreadable > 0) {
    c.notes.push_back(std::to_string(c.unreadable) +
                      " director(ies) or entries could not be read; the counts leave them out");
  }
  return c;
}

}  // namespace stallscope
