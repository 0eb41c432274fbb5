#include "bench/io_bench.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "core/file.h"
#include "core/units.h"
#include "probe/mounts.h"
#include "probe/smaps.h"

namespace stallscope {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

bool Stopped(const IoBenchOptions& o) {
  return o.stop != nullptr && o.stop->load(std::memory_order_relaxed);
}

void Progress(const IoBenchOptions& o, std::string_view text) {
  if (o.progress) o.progress(text);
}

// What RunIoBench put under PATH, removed when it goes out of scope: the
// temporary file always, the test file unless it is to be kept and complete.
struct Cleanup {
  std::string file;
  std::string temporary;
  bool keep = false;
  bool complete = false;
  ~Cleanup() {
    if (!temporary.empty()) ::unlink(temporary.c_str());
    if (!file.empty() && !(keep && complete)) ::unlink(file.c_str());
  }
};

// Writes [plan.write_from, plan.bytes) of the test file with incompressible
// data (every 4 KiB block differs, so neither compression nor dedup in the
// file system or a VM's image can shortcut the reads), under a temporary name.
Status WriteTestFile(const IoBenchOptions& o, const TestFilePlan& plan, bool existing,
                     Cleanup& cleanup) {
  cleanup.temporary = cleanup.file + ".partial";
  if (existing && plan.write_from > 0) {
    if (::rename(cleanup.file.c_str(), cleanup.temporary.c_str()) != 0) {
      return Status::FromErrno(fmt::format("renaming {}", cleanup.file), errno);
    }
  } else if (existing) {
    ::unlink(cleanup.file.c_str());
  }
  int fd = ::open(cleanup.temporary.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(fmt::format("creating {}", cleanup.temporary), errno);
  auto fail = [&](std::string_view what, int err) {
    ::close(fd);
    return Status::FromErrno(fmt::format("{} {}", what, cleanup.temporary), err);
  };
  if (::ftruncate(fd, static_cast<off_t>(plan.write_from)) != 0) return fail("truncating", errno);
  std::vector<uint64_t> block(kSequentialBlockBytes / sizeof(uint64_t));
  uint64_t seed = 0x7e57f11eULL;
  for (uint64_t& word : block) word = NextRandom(seed);
  for (uint64_t offset = plan.write_from; offset < plan.bytes; offset += kSequentialBlockBytes) {
    if (Stopped(o)) {
      ::close(fd);
      return Status::Unavailable("interrupted");
    }
    for (size_t w = 0; w < block.size(); w += kRandomBlockBytes / sizeof(uint64_t)) {
      block[w] = offset + w * sizeof(uint64_t);  // each 4 KiB block starts with its offset
    }
    const char* data = reinterpret_cast<const char*>(block.data());
    size_t done = 0;
    while (done < kSequentialBlockBytes) {
      ssize_t n = ::pwrite(fd, data + done, kSequentialBlockBytes - done,
                           static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return fail("writing", n < 0 ? errno : EIO);
      done += static_cast<size_t>(n);
    }
    if (o.advance) o.advance();
  }
  if (::fdatasync(fd) != 0) return fail("syncing", errno);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  // give the memory back
  if (::close(fd) != 0)
    return Status::FromErrno(fmt::format("closing {}", cleanup.temporary), errno);
  if (::rename(cleanup.temporary.c_str(), cleanup.file.c_str()) != 0) {
    return Status::FromErrno(fmt::format("renaming {}", cleanup.temporary), errno);
  }
  cleanup.temporary.clear();
  return Status::Ok();
}

// Whether O_DIRECT works for the file: Ok(true), Ok(false) with `why` set
// when the file system refuses it with EINVAL, or the error.
Result<bool> DirectWorks(const std::string& file, const std::string& fs_type, std::string& why) {
  int fd = ::open(file.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  std::string fs = fs_type.empty() ? "the file system" : fs_type;
  if (fd < 0) {
    int err = errno;
    if (err != EINVAL) return Status::FromErrno(fmt::format("opening {} with O_DIRECT", file), err);
    why = fmt::format("O_DIRECT refused by {} (open: {})", fs, std::strerror(err));
    return false;
  }
  void* buffer = std::aligned_alloc(4096, kRandomBlockBytes);
  ssize_t n = ::pread(fd, buffer, kRandomBlockBytes, 0);
  int err = errno;
  std::free(buffer);
  ::close(fd);
  if (n < 0) {
    if (err != EINVAL) return Status::FromErrno(fmt::format("reading {} with O_DIRECT", file), err);
    why = fmt::format("O_DIRECT refused by {} (first 4 KiB read: {})", fs, std::strerror(err));
    return false;
  }
  return true;
}

// Buffered reads: drop the file's pages, then report how many stayed.
Result<double> DropCache(const std::string& file, uint64_t bytes) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(fmt::format("opening {}", file), errno);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  Result<double> cached = CachedFraction(fd, bytes);
  ::close(fd);
  return cached;
}

}  // namespace

Result<double> CachedFraction(int fd, uint64_t bytes) {
  if (bytes == 0) return 0.0;
  long page = ::sysconf(_SC_PAGESIZE);
  void* map = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return Status::FromErrno("mmap for mincore", errno);
  std::vector<unsigned char> resident((bytes + page - 1) / page);
  int rc = ::mincore(map, bytes, resident.data());
  int err = errno;
  ::munmap(map, bytes);
  if (rc != 0) return Status::FromErrno("mincore", err);
  uint64_t in = 0;
  for (unsigned char r : resident) in += r & 1;
  return static_cast<double>(in) / static_cast<double>(resident.size());
}

Status CheckIoBenchPath(const std::string& path) {
  if (path.empty()) return Status::InvalidArgument("PATH: empty");
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::FromErrno(fmt::format("PATH {}", path), errno);
  if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(fmt::format(
        "PATH {}: not a directory (give the directory whose storage to test; the test file "
        "is made inside it)",
        path));
  }
  if (::access(path.c_str(), W_OK | X_OK) != 0) {
    return Status::FromErrno(fmt::format("PATH {}: cannot create the test file there", path),
                             errno);
  }
  return Status::Ok();
}

Status ValidateIoBenchOptions(const IoBenchOptions& o) {
  if (o.jobs < 1 || o.jobs > 256) {
    return Status::InvalidArgument(fmt::format("--jobs {}: must be between 1 and 256", o.jobs));
  }
  if (o.iodepth < 1 || o.iodepth > 1024) {
    return Status::InvalidArgument(
        fmt::format("--iodepth {}: must be between 1 and 1024", o.iodepth));
  }
  if (!(o.runtime_seconds >= 0.05 && o.runtime_seconds <= 86400)) {
    return Status::InvalidArgument(
        fmt::format("--runtime {}: must be between 0.05 and 86400 seconds", o.runtime_seconds));
  }
  if (o.metadata_files > 10'000'000) {
    return Status::InvalidArgument(fmt::format("--files {}: at most 10000000", o.metadata_files));
  }
  if (o.path.empty()) return Status::InvalidArgument("PATH: empty");
  return Status::Ok();
}

Result<IoBenchResult> RunIoBench(const IoBenchOptions& o) {
  if (Status valid = ValidateIoBenchOptions(o); !valid.ok()) return valid;
  Clock::time_point t0 = Clock::now();
  if (Status path = CheckIoBenchPath(o.path); !path.ok()) return path;
  char resolved[PATH_MAX];
  if (::realpath(o.path.c_str(), resolved) == nullptr) {
    return Status::FromErrno(fmt::format("PATH {}", o.path), errno);
  }
  struct stat st;
  IoBenchResult r;
  r.path = resolved;
  r.file = r.path + (r.path == "/" ? "" : "/") + kTestFileName;
  r.jobs = o.jobs;
  r.iodepth = o.iodepth;
  r.runtime_seconds = o.runtime_seconds;
  r.requested_bytes = o.size_bytes;
  if (Result<PathDevice> where = DeviceForPath(Root("/"), r.path); where.ok()) {
    r.fs_type = where->fs_type;
    r.device = where->disk.empty() ? where->device : where->disk;
    r.remote = where->remote;
  } else {
    r.notes.push_back("file system unknown: " + where.status().message());
  }
  struct statvfs vfs;
  if (::statvfs(r.path.c_str(), &vfs) != 0) {
    return Status::FromErrno(fmt::format("statvfs {}", r.path), errno);
  }
  r.free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  uint64_t existing = 0;
  bool exists = false;
  if (::lstat(r.file.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) {
      return Status::InvalidArgument(
          fmt::format("{} exists and is not a regular file; move it away", r.file));
    }
    exists = true;
    existing = static_cast<uint64_t>(st.st_size);
  }
  Result<TestFilePlan> plan = PlanTestFile(o.size_bytes, r.free_bytes, existing, o.jobs, r.path);
  if (!plan.ok()) return plan.status();
  r.plan = *plan;
  if (r.plan.capped) {
    r.notes.push_back(fmt::format("test file capped at {} (half of the {} free) instead of {}",
                                  FormatBytes(r.plan.bytes), FormatBytes(r.free_bytes),
                                  FormatBytes(o.size_bytes)));
  }
  Cleanup cleanup{r.file, "", o.keep, false};
  if (!r.plan.reuse) {
    Progress(o, fmt::format("writing the {} test file {}...", FormatBytes(r.plan.bytes), r.file));
    Clock::time_point w0 = Clock::now();
    if (Status s = WriteTestFile(o, r.plan, exists, cleanup); !s.ok()) return s;
    r.write_seconds = SecondsSince(w0);
  }
  cleanup.complete = true;
  // O_DIRECT, or buffered after dropping the file's pages.
  if (o.buffered) {
    r.direct = false;
    r.read_mode = "buffered (asked for with --buffered)";
  } else {
    Result<bool> direct = DirectWorks(r.file, r.fs_type, r.read_mode);
    if (!direct.ok()) return direct.status();
    r.direct = *direct;
    if (r.direct) {
      r.read_mode = "O_DIRECT";
    } else {
      r.read_mode += "; buffered reads after dropping the file's cache (posix_fadvise DONTNEED)";
      r.notes.push_back(r.read_mode);
    }
  }
  if (o.engine) {
    r.engine = *o.engine;
  } else if (Status uring = ProbeIoUring(); !uring.ok()) {
    r.engine = ReadEngine::kPsync;
    r.notes.push_back(fmt::format("io_uring refused ({}): reads used pread from {} threads",
                                  uring.message(), o.jobs * o.iodepth));
  }
  r.thp_mode = ReadThpMode();
  ReadPhaseSpec spec;
  spec.file = r.file;
  spec.file_bytes = r.plan.bytes;
  spec.direct = r.direct;
  spec.engine = r.engine;
  spec.jobs = o.jobs;
  spec.iodepth = o.iodepth;
  spec.runtime_seconds = o.runtime_seconds;
  spec.stop = o.stop;
  for (ReadPattern pattern : {ReadPattern::kSequential, ReadPattern::kRandom}) {
    if (Stopped(o)) return Status::Unavailable("interrupted");
    bool sequential = pattern == ReadPattern::kSequential;
    if (!r.direct) {
      Result<double> cached = DropCache(r.file, r.plan.bytes);
      if (!cached.ok()) return cached.status();
      (sequential ? r.cached_after_drop_sequential : r.cached_after_drop_random) = *cached;
    }
    Progress(o, fmt::format("{} reads for {:.0f} s...",
                            sequential ? "sequential 1 MiB" : "random 4 KiB", o.runtime_seconds));
    spec.pattern = pattern;
    Result<ReadPhaseResult> phase = RunReadPhase(spec);
    if (!phase.ok()) return phase.status();
    (sequential ? r.sequential : r.random) = std::move(*phase);
  }
  if (!r.direct) {
    double cached = std::max(r.cached_after_drop_sequential.value_or(0),
                             r.cached_after_drop_random.value_or(0));
    if (cached > 0.5) {
      r.notes.push_back(fmt::format(
          "{:.0f}% of the test file stayed in the page cache after the drop ({} keeps files in "
          "memory): the read figures measure memory, not storage",
          cached * 100, r.fs_type.empty() ? "the file system" : r.fs_type));
    }
  }
  if (o.metadata_files > 0) {
    if (Stopped(o)) return Status::Unavailable("interrupted");
    Progress(o, fmt::format("metadata: create, open, stat, readdir, unlink of {} files...",
                            o.metadata_files));
    MetadataSpec meta;
    meta.dir = r.path + (r.path == "/" ? "" : "/") + kMetadataDirName;
    meta.files = o.metadata_files;
    meta.jobs = o.jobs;
    meta.stop = o.stop;
    meta.advance = o.advance;
    Result<MetadataResult> m = RunMetadataPhase(meta);
    if (!m.ok()) return m.status();
    r.metadata = std::move(*m);
  }
  if (Stopped(o)) return Status::Unavailable("interrupted");
  r.file_kept = o.keep;
  r.total_seconds = SecondsSince(t0);
  return r;
}

}  // namespace stallscope
