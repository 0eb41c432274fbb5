#include "bench/read_phase.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <liburing.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <latch>
#include <random>
#include <thread>
#include <vector>

#include "bench/io_plan.h"
#include "bench/read_buffers.h"

namespace stallscope {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t Nanos(Clock::time_point from, Clock::time_point to) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count());
}

// Where one job reads next.
class OffsetStream {
 public:
  // A fresh seed per run (fio --randrepeat=0): repeating last run's offsets
  // would measure the blocks a device, RAID or hypervisor cache kept from it.
  OffsetStream(const ReadPhaseSpec& spec, unsigned job, unsigned job_count, uint64_t seed)
      : pattern_(spec.pattern), file_bytes_(spec.file_bytes), seed_(seed + job) {
    if (pattern_ == ReadPattern::kSequential) {
      slice_ = SequentialSlice(spec.file_bytes, job_count, job);
    }
  }
  uint64_t Next() {
    if (pattern_ == ReadPattern::kRandom) return RandomBlockOffset(NextRandom(seed_), file_bytes_);
    uint64_t offset = slice_.offset + position_;
    position_ += kSequentialBlockBytes;
    if (position_ >= slice_.bytes) position_ = 0;  // wrap: time-based, as fio --time_based
    return offset;
  }

 private:
  ReadPattern pattern_;
  uint64_t file_bytes_;
  uint64_t seed_;
  Slice slice_;
  uint64_t position_ = 0;
};

struct JobOutcome {
  uint64_t ios = 0;
  uint64_t bytes = 0;
  uint64_t buffer_bytes = 0;       // the job's read buffers
  uint64_t buffer_huge_bytes = 0;  // of which in transparent huge pages
  double seconds = 0;
  LatencyHistogram latency;
  Status status;
};

bool Stopped(const ReadPhaseSpec& spec) {
  return spec.stop != nullptr && spec.stop->load(std::memory_order_relaxed);
}

Status CheckRead(const ReadPhaseSpec& spec, int64_t result, uint32_t block, uint64_t offset) {
  if (result < 0) {
    return Status::FromErrno(fmt::format("reading {} at offset {}", spec.file, offset),
                             static_cast<int>(-result));
  }
  if (static_cast<uint64_t>(result) != block) {
    return Status::FromErrno(
        fmt::format("reading {} at offset {}: short read of {} of {} bytes (did the file shrink?)",
                    spec.file, offset, result, block),
        EIO);
  }
  return Status::Ok();
}

// A job's ring, set up as fio's io_uring engine sets up its own (fio 3.33
// and later): completions run in this thread when it waits for them
// (DEFER_TASKRUN, which needs SINGLE_ISSUER: only this thread submits) and
// without an interrupt to tell it (COOP_TASKRUN). Without them each
// completion interrupts the job's CPU to queue its task work (seen in perf
// on this VM); with them a one-job random read at depth 4-16 went from
// 0.66-0.69x fio to 0.86-1.11x on a RAM-backed loop device
// (docs/commands/bench-io.md). Kernels that lack a flag get the ring
// without it.
int InitRing(unsigned depth, io_uring& ring) {
  const unsigned tries[] = {
      IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
      IORING_SETUP_COOP_TASKRUN, 0};
  int rc = -EINVAL;
  for (unsigned flags : tries) {
    io_uring_params params{};
    params.flags = flags;
    rc = io_uring_queue_init_params(depth, &ring, &params);
    if (rc != -EINVAL) return rc;
  }
  return rc;
}

// io_uring: one ring of `iodepth` entries, one buffer per entry.
void RunUringJob(const ReadPhaseSpec& spec, int fd, OffsetStream offsets, std::latch& start,
                 JobOutcome& out) {
  const uint32_t block =
      spec.pattern == ReadPattern::kSequential ? kSequentialBlockBytes : kRandomBlockBytes;
  const unsigned depth = spec.iodepth;
  io_uring ring;
  int rc = InitRing(depth, ring);
  ReadBuffers buffers(depth, block);
  out.buffer_bytes = buffers.bytes();
  out.buffer_huge_bytes = buffers.huge_bytes();
  start.arrive_and_wait();
  if (rc < 0) {
    out.status = Status::FromErrno("io_uring_queue_init", -rc);
    return;
  }
  if (buffers.data() == nullptr) {
    out.status = Status::FromErrno("allocating the read buffers", ENOMEM);
    io_uring_queue_exit(&ring);
    return;
  }
  std::vector<Clock::time_point> issued(depth);
  std::vector<uint64_t> issued_offset(depth);
  unsigned inflight = 0;
  const Clock::time_point t0 = Clock::now();
  const Clock::time_point deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(spec.runtime_seconds));
  auto issue = [&](unsigned slot, Clock::time_point now) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    issued_offset[slot] = offsets.Next();
    io_uring_prep_read(sqe, fd, buffers.Block(slot), block, issued_offset[slot]);
    io_uring_sqe_set_data64(sqe, slot);
    issued[slot] = now;
    ++inflight;
  };
  Clock::time_point now = Clock::now();
  for (unsigned slot = 0; slot < depth; ++slot) issue(slot, now);
  bool draining = false;
  Clock::time_point end = deadline;
  std::vector<io_uring_cqe*> cqes(depth);
  while (inflight > 0) {
    rc = io_uring_submit_and_wait(&ring, 1);
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
      out.status = Status::FromErrno("io_uring_submit_and_wait", -rc);
      break;
    }
    unsigned count = io_uring_peek_batch_cqe(&ring, cqes.data(), depth);
    now = Clock::now();
    for (unsigned i = 0; i < count; ++i) {
      unsigned slot = static_cast<unsigned>(io_uring_cqe_get_data64(cqes[i]));
      --inflight;
      Status read = CheckRead(spec, cqes[i]->res, block, issued_offset[slot]);
      if (!read.ok()) {
        if (out.status.ok()) out.status = read;
        draining = true;
        continue;
      }
      if (!draining && now <= deadline) {
        out.latency.Record(Nanos(issued[slot], now));
        ++out.ios;
        out.bytes += block;
      }
      if (!draining && (now >= deadline || Stopped(spec))) {
        draining = true;
        end = std::min(now, deadline);
      }
      if (!draining) {
        // Each read goes out as soon as it is prepared, as fio's default
        // (--iodepth_batch_submit=1). Held back until the whole batch is
        // reaped, adjacent sequential reads went out together and merged in
        // the block layer (fewer, larger requests than fio's), and at depth
        // 16 one job kept fewer reads in flight than its depth.
        issue(slot, now);
        io_uring_submit(&ring);
      }
    }
    io_uring_cq_advance(&ring, count);
  }
  out.seconds = std::chrono::duration<double>(end - t0).count();
  io_uring_queue_exit(&ring);
}

// pread: one read in flight per thread.
void RunPsyncJob(const ReadPhaseSpec& spec, int fd, OffsetStream offsets, std::latch& start,
                 JobOutcome& out) {
  const uint32_t block =
      spec.pattern == ReadPattern::kSequential ? kSequentialBlockBytes : kRandomBlockBytes;
  ReadBuffers buffer(1, block);
  out.buffer_bytes = buffer.bytes();
  out.buffer_huge_bytes = buffer.huge_bytes();
  start.arrive_and_wait();
  if (buffer.data() == nullptr) {
    out.status = Status::FromErrno("allocating the read buffer", ENOMEM);
    return;
  }
  const Clock::time_point t0 = Clock::now();
  const Clock::time_point deadline = t0 + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(spec.runtime_seconds));
  Clock::time_point now = t0;
  while (now < deadline && !Stopped(spec)) {
    uint64_t offset = offsets.Next();
    Clock::time_point issued = Clock::now();
    ssize_t n = ::pread(fd, buffer.data(), block, static_cast<off_t>(offset));
    now = Clock::now();
    Status read = CheckRead(spec, n < 0 ? -errno : n, block, offset);
    if (!read.ok()) {
      out.status = read;
      break;
    }
    if (now <= deadline) {
      out.latency.Record(Nanos(issued, now));
      ++out.ios;
      out.bytes += block;
    }
  }
  out.seconds = std::chrono::duration<double>(std::min(now, deadline) - t0).count();
}

}  // namespace

Status ProbeIoUring() {
  io_uring ring;
  int rc = io_uring_queue_init(1, &ring, 0);
  if (rc < 0) return Status::FromErrno("io_uring_queue_init", -rc);
  io_uring_queue_exit(&ring);
  return Status::Ok();
}

Result<ReadPhaseResult> RunReadPhase(const ReadPhaseSpec& spec) {
  if (spec.jobs == 0 || spec.iodepth == 0)
    return Status::InvalidArgument("jobs and iodepth must be >= 1");
  const bool psync = spec.engine == ReadEngine::kPsync;
  // pread keeps one read in flight per thread: iodepth reads need iodepth threads.
  const unsigned threads = psync ? spec.jobs * spec.iodepth : spec.jobs;
  std::vector<int> fds;
  auto close_all = [&] {
    for (int fd : fds) ::close(fd);
  };
  for (unsigned i = 0; i < threads; ++i) {
    int fd = ::open(spec.file.c_str(), O_RDONLY | O_CLOEXEC | (spec.direct ? O_DIRECT : 0));
    if (fd < 0) {
      int err = errno;
      close_all();
      return Status::FromErrno(
          fmt::format("opening {}{}", spec.file, spec.direct ? " with O_DIRECT" : ""), err);
    }
    fds.push_back(fd);
  }
  std::vector<JobOutcome> outcomes(threads);
  std::latch start(threads);
  std::vector<std::thread> workers;
  workers.reserve(threads);
  const uint64_t seed = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  for (unsigned i = 0; i < threads; ++i) {
    OffsetStream offsets(spec, i, threads, seed * 0x9e3779b97f4a7c15ULL);
    if (psync) {
      workers.emplace_back(RunPsyncJob, std::cref(spec), fds[i], offsets, std::ref(start),
                           std::ref(outcomes[i]));
    } else {
      workers.emplace_back(RunUringJob, std::cref(spec), fds[i], offsets, std::ref(start),
                           std::ref(outcomes[i]));
    }
  }
  for (std::thread& t : workers) t.join();
  close_all();
  ReadPhaseResult result;
  result.block_bytes =
      spec.pattern == ReadPattern::kSequential ? kSequentialBlockBytes : kRandomBlockBytes;
  for (const JobOutcome& o : outcomes) {
    if (!o.status.ok()) return o.status;
    result.ios += o.ios;
    result.bytes += o.bytes;
    result.buffer_bytes += o.buffer_bytes;
    result.buffer_huge_bytes += o.buffer_huge_bytes;
    result.seconds = std::max(result.seconds, o.seconds);
    result.latency.Merge(o.latency);
  }
  return result;
}

}  // namespace stallscope
