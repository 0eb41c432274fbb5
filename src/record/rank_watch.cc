#include "record/rank_watch.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <utility>

#include "core/text.h"
#include "probe/process_tree.h"
#include "probe/python_stacks.h"

namespace stallscope {

// The ring's layout (python/stallscope/_stops.py, docs/hook-protocol.md).
namespace {
constexpr int64_t kRingMagic = 0x676E69726C747373;  // "sstlring"
constexpr int64_t kRingVersion = 1;
constexpr size_t kHeaderWords = 16;
constexpr size_t kSlotWords = 3;
constexpr size_t kMaxSlots = 1 << 16;
constexpr size_t kKeptStepDurations = 512;
constexpr size_t kMaxRows = 20000;  // stops and states kept: a few per rank
constexpr size_t kMaxDeathLooks = 8;
constexpr size_t kMaxRanks = 65536;
constexpr size_t kMaxStackBytes = 1 << 20;  // of one look's dump

int64_t NowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

int OpenPidFd(int pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

double TicksToSeconds(uint64_t ticks) {
  static const long hz = sysconf(_SC_CLK_TCK);
  return hz > 0 ? static_cast<double>(ticks) / static_cast<double>(hz) : 0;
}

// A regular file's bytes from `offset`, at most `max`: opened without
// following a link and without blocking (a FIFO put where a ring or a stacks
// file belongs is refused, never waited on). nullopt when not read.
std::optional<std::string> ReadRegular(const std::string& path, size_t max, size_t offset = 0) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::optional<std::string> out;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    std::string bytes(max, '\0');
    size_t got = 0;
    while (got < max) {
      const ssize_t n = pread(fd, bytes.data() + got, max - got, static_cast<off_t>(offset + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    bytes.resize(got);
    out = std::move(bytes);
  }
  close(fd);
  return out;
}

int SendByPidFd(int pidfd, int sig) {
#ifdef SYS_pidfd_send_signal
  return static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0));
#else
  (void)pidfd;
  (void)sig;
  errno = ENOSYS;
  return -1;
#endif
}

// Whether the process catches `sig` now (SigCgt of /proc/PID/status): the
// hook's word says it armed the stack signal, the kernel says it still is.
bool Catches(const Root& root, int pid, int sig) {
  Result<std::string> status =
      ReadFile(root.Path("/proc/" + std::to_string(pid) + "/status"), 1 << 16);
  if (!status.ok() || sig < 1 || sig > 64) return false;
  for (std::string_view line : SplitLines(*status)) {
    if (line.substr(0, 7) != "SigCgt:") continue;
    const std::string_view hex = Trim(line.substr(7));
    uint64_t mask = 0;
    const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), mask, 16);
    return ec == std::errc() && ((mask >> (sig - 1)) & 1) != 0;
  }
  return false;
}

void SleepSeconds(double s) {
  timespec ts{static_cast<time_t>(s), static_cast<long>((s - static_cast<time_t>(s)) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

// The line `run` prints when it finds a hang: the ranks not in a collective
// first (where they stopped), then those that wait in one.
std::string DescribeHang(const std::vector<RankState>& states) {
  std::vector<std::string> stopped, waiting;
  for (const RankState& s : states) {
    if (s.reason != "hang") continue;
    if (s.collective_since_t || s.stack.find("/torch/distributed/") != std::string::npos) {
      waiting.push_back(std::to_string(s.rank));
    } else {
      stopped.push_back("rank " + std::to_string(s.rank) + " stopped" +
                        (s.frame.empty() ? std::string(" (no stack: the hook did not arm one)")
                                         : " at " + s.frame));
    }
  }
  std::string line = Join(stopped, "; ");
  if (!waiting.empty()) {
    line += std::string(line.empty() ? "" : "; ") +
            (waiting.size() == 1 ? "rank " + waiting[0] + " waits"
                                 : "ranks " + Join(waiting, ", ") + " wait") +
            " in a collective";
  }
  return line;
}

}  // namespace

struct RankWatch::Rank {
  int pid = 0;
  int rank = -1;
  int pidfd = -1;
  bool gone = false;
  int64_t last_step = -1;   // the last step number that came as a datagram
  double last_t = -1e300;   // its end, seconds since the run's start
  size_t stack_offset = 0;  // of its stacks file, read up to here
};

struct RankWatch::Ring {
  int64_t wait_since_ns = 0;
  bool waiting = false;  // all-reduces launched and not all completed
  uint64_t main_thread = 0;
  int stack_signal = 0;
  std::vector<int64_t> slots;  // t0, t1, t2 per step, by t2
};

RankWatch::RankWatch(Root root, std::string ring_dir, HangOptions options, int64_t start_ns)
    : root_(std::move(root)),
      ring_dir_(std::move(ring_dir)),
      options_(std::move(options)),
      start_ns_(start_ns) {}

RankWatch::~RankWatch() {
  for (auto& [pid, r] : ranks_) {
    if (r->pidfd >= 0) close(r->pidfd);
    delete r;
  }
}

// Whether `pid` is a process of this job: its environment names this run's
// hook socket. A pid a hello gave may be another pid namespace's (a rank in
// a container) or reused: such a process is never signalled.
bool RankWatch::Ours(int pid) const {
  if (ring_dir_.empty()) return false;
  Result<std::string> env =
      ReadFile(root_.Path("/proc/" + std::to_string(pid) + "/environ"), 1 << 20);
  if (!env.ok()) return false;
  const std::string want = "STALLSCOPE_SOCKET=" + ring_dir_ + "/";
  for (size_t at = 0; at < env->size();) {
    const size_t end = std::min(env->find('\0', at), env->size());
    if (std::string_view(*env).substr(at, end - at).starts_with(want)) return true;
    at = end + 1;
  }
  return false;
}

void RankWatch::NoteRanks(const std::vector<RankInfo>& ranks) {
  for (const RankInfo& info : ranks) {
    if (info.pid <= 1) continue;
    auto it = ranks_.find(info.pid);
    if (it == ranks_.end()) {
      if (ranks_.size() >= kMaxRanks) break;
      Rank* r = new Rank;
      r->pid = info.pid;
      // A pidfd only for a process of this job: what is signalled, and whose
      // end is noted, is that process and no other.
      r->pidfd = root_.IsLive() && Ours(info.pid) ? OpenPidFd(info.pid) : -1;
      it = ranks_.emplace(info.pid, r).first;
    }
    it->second->rank = info.rank;
  }
}

void RankWatch::NoteSteps(const std::vector<StepEvent>& steps) {
  for (const StepEvent& e : steps) {
    // Steps carry the rank, not the pid: every process of that rank (a rank
    // restarted has two) has sent up to here.
    for (auto& [pid, r] : ranks_) {
      if (r->rank != e.rank) continue;
      r->last_step = std::max(r->last_step, e.step);
      r->last_t = std::max(r->last_t, e.t);
    }
    // A time past now (a garbled record) would turn hang detection off.
    const int64_t end_ns = std::min(start_ns_ + static_cast<int64_t>(e.t * 1e9), NowNs());
    if (!last_step_ns_ || end_ns > *last_step_ns_) last_step_ns_ = end_ns;
    if (recent_steps_.size() >= kKeptStepDurations) {
      recent_steps_.erase(recent_steps_.begin(), recent_steps_.begin() + kKeptStepDurations / 2);
    }
    recent_steps_.push_back(e.step_seconds);
  }
}

std::vector<int> RankWatch::PidFds() const {
  std::vector<int> fds;
  for (const auto& [pid, r] : ranks_) {
    if (!r->gone && r->pidfd >= 0) fds.push_back(r->pidfd);
  }
  return fds;
}

std::optional<RankWatch::Ring> RankWatch::ReadRing(const Rank& r) const {
  if (ring_dir_.empty()) return std::nullopt;
  std::optional<std::string> bytes = ReadRegular(ring_dir_ + "/ring-" + std::to_string(r.pid),
                                                 (kHeaderWords + kMaxSlots * kSlotWords) * 8);
  if (!bytes || bytes->size() < kHeaderWords * 8) return std::nullopt;
  std::vector<int64_t> w(bytes->size() / 8);
  std::memcpy(w.data(), bytes->data(), w.size() * 8);
  if (w[0] != kRingMagic || w[1] != kRingVersion || w[2] != r.pid || w[5] != kSlotWords ||
      w[4] <= 0 || static_cast<size_t>(w[4]) > kMaxSlots ||
      w.size() < kHeaderWords + static_cast<size_t>(w[4]) * kSlotWords) {
    return std::nullopt;
  }
  Ring ring;
  // Times outside (0, now] are garbage: never waited on, never subtracted.
  const int64_t now = NowNs();
  ring.waiting = w[7] > w[8] && w[9] > 0 && w[9] <= now;
  ring.wait_since_ns = w[9];
  ring.main_thread = static_cast<uint64_t>(w[10]);
  ring.stack_signal = static_cast<int>(w[11]);
  std::vector<std::array<int64_t, 3>> steps;
  for (size_t i = 0; i < static_cast<size_t>(w[4]); ++i) {
    const int64_t* s = &w[kHeaderWords + i * kSlotWords];
    if (s[0] > 0 && s[0] <= s[1] && s[1] <= s[2] && s[2] <= now) {
      steps.push_back({s[0], s[1], s[2]});
    }
  }
  std::sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a[2] < b[2]; });
  for (const auto& s : steps) ring.slots.insert(ring.slots.end(), s.begin(), s.end());
  return ring;
}

RankState RankWatch::StateOf(const Rank& r, double t, const char* reason) const {
  RankState s;
  s.t = t;
  s.reason = reason;
  s.pid = r.pid;
  s.rank = r.rank;
  s.steps = r.last_step + 1;
  if (r.last_t > -1e299) s.last_step_t = r.last_t;
  if (std::optional<Ring> ring = ReadRing(r)) {
    for (size_t i = 2; i < ring->slots.size(); i += 3) {
      const double end = static_cast<double>(ring->slots[i] - start_ns_) / 1e9;
      if (end > r.last_t + 1e-6) ++s.steps;
      if (!s.last_step_t || end > *s.last_step_t) s.last_step_t = end;
    }
    if (ring->waiting)
      s.collective_since_t = static_cast<double>(ring->wait_since_ns - start_ns_) / 1e9;
  }
  const std::string proc = "/proc/" + std::to_string(r.pid);
  if (Result<std::string> stat = ReadFile(root_.Path(proc + "/stat"), 4096); stat.ok()) {
    if (Result<ProcStat> p = ParseProcStat(*stat, proc + "/stat"); p.ok()) {
      s.state = std::string(1, p->state);
      s.threads = static_cast<int>(p->threads);
      s.cpu_seconds = TicksToSeconds(p->utime_ticks + p->stime_ticks);
    }
  }
  if (Result<std::string> wchan = ReadFile(root_.Path(proc + "/wchan"), 256); wchan.ok()) {
    s.wchan = std::string(Trim(*wchan));
    if (s.wchan == "0") s.wchan.clear();
  }
  return s;
}

void RankWatch::NoteEnds(int64_t now_ns) {
  const double t = static_cast<double>(now_ns - start_ns_) / 1e9;
  for (auto& [pid, r] : ranks_) {
    if (r->gone) continue;
    bool ended = false;
    if (r->pidfd >= 0) {
      pollfd p{r->pidfd, POLLIN, 0};
      ended = poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP));
    }
    if (!ended) continue;
    r->gone = true;
    close(r->pidfd);
    r->pidfd = -1;
    if (stops_.size() < kMaxRows)
      stops_.push_back({r->pid, r->rank, t, "gone", {}, {}, "", "recorder"});
    ++deaths_seen_;
    if (deaths_seen_ > kMaxDeathLooks) continue;
    for (const auto& [other_pid, other] : ranks_) {
      if (other->gone || states_.size() >= kMaxRows) continue;
      states_.push_back(StateOf(*other, t, "death"));
    }
  }
}

// Each live rank's state, with its main thread's stack where the hook armed
// faulthandler: the signal sent, its file read from where the last look
// stopped (faulthandler writes inside the signal handler: at once).
void RankWatch::Look(std::vector<RankState>& into, double t) {
  std::vector<std::pair<Rank*, uint64_t>> asked;  // rank, its main thread
  for (auto& [pid, r] : ranks_) {
    if (r->gone) continue;
    std::optional<Ring> ring = ReadRing(*r);
    // Only a process of this job (its pidfd) whose hook armed the signal and
    // that catches it now: left to its default, the signal would end it.
    if (!ring || r->pidfd < 0 || !root_.IsLive() || options_.stacks_dir.empty() ||
        options_.stack_signal <= 0 || ring->stack_signal != options_.stack_signal ||
        !Catches(root_, r->pid, options_.stack_signal)) {
      continue;
    }
    if (SendByPidFd(r->pidfd, options_.stack_signal) == 0) {
      asked.emplace_back(r, ring->main_thread);
    }
  }
  if (!asked.empty()) SleepSeconds(0.3);
  for (auto& [pid, r] : ranks_) {
    if (r->gone) continue;
    RankState s = StateOf(*r, t, "hang");
    for (const auto& [who, main_thread] : asked) {
      if (who != r) continue;
      const std::string file = options_.stacks_dir + "/rank-" + std::to_string(r->rank) + "." +
                               std::to_string(r->pid) + ".txt";
      std::optional<std::string> fresh = ReadRegular(file, kMaxStackBytes, r->stack_offset);
      if (!fresh || fresh->empty()) break;
      r->stack_offset += fresh->size();
      std::optional<PythonThreadStack> main =
          MainThreadStack(ParseFaulthandlerDump(*fresh), main_thread);
      if (!main) break;
      if (std::optional<PythonFrame> f = JobFrame(*main)) s.frame = f->Where();
      for (const PythonFrame& f : main->frames) s.stack += f.Where() + "\n";
    }
    into.push_back(std::move(s));
  }
}

// Stuck over the two looks: still there, no step finished, the same stack
// (where both have one), and in a collective or idle (a rank spinning in an NCCL collective uses a
// CPU; a rank evaluating or saving a checkpoint does too, and moves).
bool RankWatch::Stuck(const RankState& first, const RankState& second, double gap) const {
  // Ended meanwhile (the job finishing), or a step finished: not stuck.
  if (second.state.empty() || second.state == "Z" || second.steps != first.steps ||
      second.last_step_t != first.last_step_t) {
    return false;
  }
  const double cpu = second.cpu_seconds.value_or(0) - first.cpu_seconds.value_or(0);
  const bool idle = cpu < 0.2 * gap;
  const bool waiting = second.collective_since_t.has_value() ||
                       second.stack.find("/torch/distributed/") != std::string::npos;
  if (!first.stack.empty() && !second.stack.empty()) {
    return first.stack == second.stack && (idle || waiting);
  }
  return idle || waiting;
}

double RankWatch::Threshold() const {
  if (options_.after_seconds) return *options_.after_seconds;
  std::vector<double> d = recent_steps_;
  double median = 0;
  if (!d.empty()) {
    std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
    median = d[d.size() / 2];
  }
  return std::max(kHangFloorSeconds, kHangStepFactor * median);
}

HangAction RankWatch::Check(int64_t now_ns, std::FILE* status) {
  if (options_.after_seconds && *options_.after_seconds <= 0) return HangAction::kNone;
  // --hang-action kill after a hang: the job ends once the dumps asked for
  // are written, or kDumpWaitSeconds on.
  if (end_job_ns_) {
    if (now_ns < *end_job_ns_ && !DumpsDone()) return HangAction::kNone;
    end_job_ns_.reset();
    return HangAction::kEndJob;
  }
  // The rings first: steps a rank finished and has not sent yet (a rank
  // sends every 500 ms at a step's end: one that stops holds the last ones).
  for (auto& [pid, r] : ranks_) {
    if (r->gone) continue;
    if (last_step_ns_ && static_cast<double>(now_ns - *last_step_ns_) / 1e9 < Threshold() / 2) {
      break;
    }
    if (std::optional<Ring> ring = ReadRing(*r); ring && !ring->slots.empty()) {
      last_step_ns_ = std::max(last_step_ns_.value_or(0), ring->slots.back());
    }
  }
  if (!last_step_ns_) return HangAction::kNone;  // no step yet: starting up
  const double idle = static_cast<double>(now_ns - *last_step_ns_) / 1e9;
  const double threshold = Threshold();
  if (idle < threshold) {
    hang_reported_ = false;
    next_check_ns_.reset();
    second_look_ns_.reset();
    return HangAction::kNone;
  }
  if (hang_reported_) return HangAction::kNone;
  const double t = static_cast<double>(now_ns - start_ns_) / 1e9;
  if (!second_look_ns_) {
    // The first look now, the second at a later interval: the recorder's
    // loop goes on between them (hook datagrams, signals, samples).
    if (next_check_ns_ && now_ns < *next_check_ns_) return HangAction::kNone;
    std::fprintf(status,
                 "stallscope: no rank finished a step for %.0f s (--hang-after %.0f): looking at "
                 "where each rank is\n",
                 idle, threshold);
    std::fflush(status);
    first_look_.clear();
    Look(first_look_, t);
    first_look_ns_ = now_ns;
    second_look_ns_ = now_ns + static_cast<int64_t>(options_.look_gap_seconds * 1e9);
    return HangAction::kNone;
  }
  if (now_ns < *second_look_ns_) return HangAction::kNone;
  second_look_ns_.reset();
  return Judge(now_ns, t, threshold, status);
}

// The second look, against the first: a hang when every live rank is stuck.
HangAction RankWatch::Judge(int64_t now_ns, double t, double threshold, std::FILE* status) {
  const double gap = static_cast<double>(now_ns - first_look_ns_) / 1e9;
  std::vector<RankState> second;
  Look(second, t);
  std::vector<std::string> busy;
  for (RankState& s : second) {
    auto before = std::find_if(first_look_.begin(), first_look_.end(),
                               [&](const RankState& f) { return f.pid == s.pid; });
    if (before == first_look_.end()) continue;
    if (!before->stack.empty() && !s.stack.empty()) s.stack_unchanged = before->stack == s.stack;
    if (!Stuck(*before, s, gap)) busy.push_back(std::to_string(s.rank));
    // Kept as the CPU used between the looks (after Stuck read the totals).
    if (s.cpu_seconds && before->cpu_seconds) s.cpu_seconds = *s.cpu_seconds - *before->cpu_seconds;
  }
  if (!busy.empty() || second.empty()) {
    next_check_ns_ = now_ns + static_cast<int64_t>(threshold / 2 * 1e9);
    std::fprintf(status,
                 "stallscope: not a hang: rank %s still works (a step ended, its stack moves, it "
                 "uses a CPU, or it ended); looking again in %.0f s\n",
                 Join(busy, ", ").c_str(), threshold / 2);
    return HangAction::kNone;
  }
  hang_reported_ = true;
  std::vector<RankState> hung;
  for (RankState& s : second) {
    hung.push_back(s);
    if (states_.size() < kMaxRows) states_.push_back(std::move(s));
  }
  std::fprintf(status, "stallscope: hang: %s\n", DescribeHang(hung).c_str());
  if (const int asked = RequestFlightRecorderDumps(); asked > 0) {
    std::fprintf(status, "stallscope: asked %d rank(s) for a Flight Recorder dump\n", asked);
    if (options_.kill) {
      dumps_asked_ = asked;
      dump_sizes_.clear();
      end_job_ns_ = now_ns + static_cast<int64_t>(kDumpWaitSeconds * 1e9);
      std::fflush(status);
      return HangAction::kNone;  // Check ends the job once they are written
    }
  }
  std::fflush(status);
  return options_.kill ? HangAction::kEndJob : HangAction::kNone;
}

void RankWatch::Recover(HookEvents& events) {
  for (auto& [pid, r] : ranks_) {
    std::optional<Ring> ring = ReadRing(*r);
    if (!ring) continue;
    for (size_t i = 0; i + 2 < ring->slots.size(); i += 3) {
      const int64_t* s = &ring->slots[i];
      const double end = static_cast<double>(s[2] - start_ns_) / 1e9;
      if (end <= r->last_t + 1e-6) continue;
      events.steps.push_back(
          {r->rank, ++r->last_step, end, (s[1] - s[0]) / 1e9, (s[2] - s[0]) / 1e9});
      r->last_t = end;
    }
  }
}

void RankWatch::SignalRanks(int sig) {
  for (auto& [pid, r] : ranks_) {
    if (!r->gone && r->pidfd >= 0) (void)SendByPidFd(r->pidfd, sig);
  }
}

int RankWatch::EndOrphans(std::FILE* status) {
  std::vector<std::string> left;
  for (const auto& [pid, r] : ranks_) {
    if (!r->gone && r->pidfd >= 0) left.push_back(std::to_string(pid));
  }
  if (left.empty()) return 0;
  std::fprintf(status,
               "stallscope: the job ended and left %zu rank(s) running (pid %s): SIGTERM, SIGKILL "
               "%.0f s later to what is left\n",
               left.size(), Join(left, ", ").c_str(), kOrphanGraceSeconds);
  std::fflush(status);
  auto signal_all = [&](int sig) {
    const double t = static_cast<double>(NowNs() - start_ns_) / 1e9;
    for (auto& [pid, r] : ranks_) {
      if (r->gone || r->pidfd < 0 || SendByPidFd(r->pidfd, sig) != 0) continue;
      if (stops_.size() < kMaxRows) {
        stops_.push_back({r->pid, r->rank, t, "sent_signal", {}, sig, "", "recorder"});
      }
    }
  };
  auto wait_until = [&](int64_t deadline) {
    while (NowNs() < deadline) {
      NoteEnds(NowNs());
      if (std::none_of(ranks_.begin(), ranks_.end(),
                       [](const auto& e) { return !e.second->gone && e.second->pidfd >= 0; })) {
        return true;
      }
      SleepSeconds(0.05);
    }
    return false;
  };
  signal_all(SIGTERM);
  if (!wait_until(NowNs() + static_cast<int64_t>(kOrphanGraceSeconds * 1e9))) {
    signal_all(SIGKILL);
    wait_until(NowNs() + 2000000000LL);
  }
  return static_cast<int>(left.size());
}

namespace {

// The named pipes PyTorch made in `dir` (names ending ".pipe", FIFOs only).
std::vector<std::string> DumpPipes(const std::string& dir) {
  std::vector<std::string> pipes;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      struct stat st {};
      if (name.size() > 5 && name.substr(name.size() - 5) == ".pipe" &&
          lstat((dir + "/" + name).c_str(), &st) == 0 && S_ISFIFO(st.st_mode)) {
        pipes.push_back(dir + "/" + name);
      }
    }
    closedir(d);
  }
  return pipes;
}

}  // namespace

int RankWatch::RequestFlightRecorderDumps() const {
  if (options_.stacks_dir.empty()) return 0;
  int asked = 0;
  for (const std::string& pipe : DumpPipes(options_.stacks_dir)) {
    // Non-blocking: a pipe nobody reads (its rank gone) fails with ENXIO;
    // never through a link, and only a FIFO.
    const int fd = open(pipe.c_str(), O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
      close(fd);
      continue;
    }
    if (write(fd, "1\n", 2) == 2) ++asked;
    close(fd);
  }
  return asked;
}

bool RankWatch::DumpsDone() {
  // A dump is written in place, not renamed: done when its size held still
  // from one look to the next.
  int written = 0;
  for (const std::string& pipe : DumpPipes(options_.stacks_dir)) {
    struct stat st {};
    const std::string dump = pipe.substr(0, pipe.size() - 5);
    if (stat(dump.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) continue;
    auto [it, fresh] = dump_sizes_.emplace(dump, st.st_size);
    if (!fresh && it->second == st.st_size) ++written;
    it->second = st.st_size;
  }
  return written >= dumps_asked_;
}

std::vector<RankStop> RankWatch::TakeStops() { return std::exchange(stops_, {}); }
std::vector<RankState> RankWatch::TakeStates() { return std::exchange(states_, {}); }

Status PrepareStacksDir(const std::string& dir) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument(dir +
                                     ": exists and is not a directory (the stacks of a "
                                     "hang go there); move it away");
    }
  } else if (mkdir(dir.c_str(), 0755) != 0) {
    return Status::FromErrno("cannot make " + dir, errno);
  }
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind("rank-", 0) == 0 && name.size() > 4 &&
          name.substr(name.size() - 4) == ".txt") {
        unlink((dir + "/" + name).c_str());
      }
    }
    closedir(d);
  }
  return Status::Ok();
}

void FinishStacksDir(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string path = dir + "/" + e->d_name;
      struct stat st {};
      const std::string name = e->d_name;
      if (lstat(path.c_str(), &st) != 0) continue;
      // Empty stack files, and the pipes a killed rank's PyTorch left.
      if ((name.rfind("rank-", 0) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) ||
          (name.size() > 5 && name.substr(name.size() - 5) == ".pipe" && S_ISFIFO(st.st_mode))) {
        unlink(path.c_str());
      }
    }
    closedir(d);
  }
  rmdir(dir.c_str());  // only when empty
}

}  // namespace stallscope
