#include "bench/metadata_phase.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <latch>
#include <thread>

namespace stallscope {
namespace {

using Clock = std::chrono::steady_clock;

struct JobOutcome {
  double seconds = 0;
  uint64_t ops = 0;
  LatencyHistogram latency;
  Status status;
};

bool Stopped(const MetadataSpec& spec) {
  return spec.stop != nullptr && spec.stop->load(std::memory_order_relaxed);
}

// Runs `op` on every file of every job, jobs in parallel, timing each call.
// `op` returns 0 or an errno.
Status RunPass(const MetadataSpec& spec, const char* name,
               const std::function<int(const std::string&)>& op, MetadataOp& out) {
  std::vector<JobOutcome> outcomes(spec.jobs);
  std::latch start(spec.jobs);
  std::vector<std::thread> workers;
  for (unsigned job = 0; job < spec.jobs; ++job) {
    workers.emplace_back([&, job] {
      JobOutcome& o = outcomes[job];
      std::vector<std::string> paths;
      for (uint64_t i = job; i < spec.files; i += spec.jobs) {
        paths.push_back(spec.dir + "/" + MetadataFileName(job, i));
      }
      start.arrive_and_wait();
      Clock::time_point t0 = Clock::now();
      for (const std::string& path : paths) {
        if (Stopped(spec)) break;
        Clock::time_point before = Clock::now();
        int err = op(path);
        Clock::time_point after = Clock::now();
        if (err != 0) {
          o.status = Status::FromErrno(fmt::format("{} {}", name, path), err);
          break;
        }
        o.latency.Record(static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(after - before).count()));
        ++o.ops;
        if (spec.advance) spec.advance();
      }
      o.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    });
  }
  for (std::thread& t : workers) t.join();
  out.op = name;
  for (const JobOutcome& o : outcomes) {
    if (!o.status.ok()) return o.status;
    out.ops += o.ops;
    out.seconds = std::max(out.seconds, o.seconds);
    out.latency.Merge(o.latency);
  }
  return Status::Ok();
}

// Lists the directory: at least 3 times and for at least 0.2 s, at most 100 times.
Status ListPasses(const MetadataSpec& spec, MetadataOp& out) {
  out.op = "readdir";
  Clock::time_point t0 = Clock::now();
  for (int pass = 0; pass < 100 && !Stopped(spec); ++pass) {
    if (pass >= 3 && Clock::now() - t0 > std::chrono::milliseconds(200)) break;
    Clock::time_point before = Clock::now();
    DIR* dir = ::opendir(spec.dir.c_str());
    if (dir == nullptr) return Status::FromErrno(fmt::format("opendir {}", spec.dir), errno);
    uint64_t entries = 0;
    errno = 0;
    while (dirent* e = ::readdir(dir)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ++entries;
    }
    int err = errno;
    ::closedir(dir);
    if (err != 0) return Status::FromErrno(fmt::format("readdir {}", spec.dir), err);
    out.latency.Record(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - before).count()));
    out.ops += entries;
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return Status::Ok();
}

// Removes our files and the directory; tolerates what is already gone.
void RemoveDirectory(const MetadataSpec& spec, unsigned jobs) {
  for (unsigned job = 0; job < jobs; ++job) {
    for (uint64_t i = job; i < spec.files; i += jobs) {
      ::unlink((spec.dir + "/" + MetadataFileName(job, i)).c_str());
    }
  }
  ::rmdir(spec.dir.c_str());
}

// A run killed with SIGKILL leaves the directory behind: remove it when it
// holds nothing but files named as ours ("f<job>-<index>"); anything else stays
// and mkdir's error says so.
void RemoveLeftovers(const std::string& path) {
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return;
  std::vector<std::string> ours;
  bool foreign = false;
  while (dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    bool matches = name.size() >= 4 && name[0] == 'f' &&
                   name.find_first_not_of("0123456789-", 1) == std::string_view::npos &&
                   std::count(name.begin(), name.end(), '-') == 1;
    if (!matches) foreign = true;
    ours.emplace_back(name);
  }
  ::closedir(dir);
  if (foreign) return;
  for (const std::string& name : ours) ::unlink((path + "/" + name).c_str());
  ::rmdir(path.c_str());
}

}  // namespace

std::string MetadataFileName(unsigned job, uint64_t index) {
  return fmt::format("f{}-{}", job, index);
}

Result<MetadataResult> RunMetadataPhase(const MetadataSpec& spec) {
  if (spec.jobs == 0) return Status::InvalidArgument("metadata phase: jobs must be >= 1");
  RemoveLeftovers(spec.dir);
  if (::mkdir(spec.dir.c_str(), 0700) != 0) {
    return Status::FromErrno(
        fmt::format("creating {} (left by an interrupted run? remove it)", spec.dir), errno);
  }
  std::vector<char> content(kMetadataFileBytes, 'x');
  MetadataResult result;
  result.files = spec.files;
  auto create = [&](const std::string& path) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return errno;
    ssize_t n = ::write(fd, content.data(), content.size());
    int err = n < 0 ? errno : (static_cast<size_t>(n) != content.size() ? EIO : 0);
    if (::close(fd) != 0 && err == 0) err = errno;
    return err;
  };
  auto open_close = [](const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    ::close(fd);
    return 0;
  };
  auto stat_one = [](const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 ? 0 : errno;
  };
  auto unlink_one = [](const std::string& path) { return ::unlink(path.c_str()) == 0 ? 0 : errno; };
  Status status;
  result.ops.resize(5);
  status = RunPass(spec, "create", create, result.ops[0]);
  if (status.ok()) status = RunPass(spec, "open", open_close, result.ops[1]);
  if (status.ok()) status = RunPass(spec, "stat", stat_one, result.ops[2]);
  if (status.ok()) status = ListPasses(spec, result.ops[3]);
  if (status.ok()) status = RunPass(spec, "unlink", unlink_one, result.ops[4]);
  RemoveDirectory(spec, spec.jobs);
  if (!status.ok()) return status;
  return result;
}

}  // namespace stallscope
