#include "analyze/run/rank_stop_rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "core/text.h"

namespace stallscope {
namespace {

constexpr double kTogetherSeconds = 2.0;  // ranks ended "at once" by a user's stop

std::string SignalName(int sig) {
  static const std::map<int, const char*> names = {
      {1, "SIGHUP"},   {2, "SIGINT"},   {3, "SIGQUIT"},  {4, "SIGILL"},
      {6, "SIGABRT"},  {7, "SIGBUS"},   {8, "SIGFPE"},   {9, "SIGKILL"},
      {10, "SIGUSR1"}, {11, "SIGSEGV"}, {12, "SIGUSR2"}, {13, "SIGPIPE"},
      {14, "SIGALRM"}, {15, "SIGTERM"}, {24, "SIGXCPU"}, {25, "SIGXFSZ"}};
  auto it = names.find(sig);
  return it != names.end() ? it->second : "signal " + std::to_string(sig);
}

// The hook's exception detail: where, thread, type, message, frame.
struct PyException {
  std::string where, thread, type, message, frame;
};

PyException ParseException(const std::string& detail) {
  std::vector<std::string> f;
  size_t at = 0;
  while (f.size() < 4) {
    const size_t tab = detail.find('\t', at);
    if (tab == std::string::npos) break;
    f.push_back(detail.substr(at, tab - at));
    at = tab + 1;
  }
  f.push_back(detail.substr(at));
  f.resize(5);
  return {f[0], f[1], f[2], f[3], f[4]};
}

// Everything known of one rank's process.
struct RankEnd {
  int pid = 0;
  int rank = -1;
  std::string host;
  std::optional<double> t;  // when it ended (launcher's report, else the recorder's)
  std::optional<int> exit_code;
  std::optional<int> signal;
  bool gone = false;
  bool bye = false;
  std::optional<double> sent_at;  // the launcher sent it a signal (the others' end)
  std::vector<int> sent_signals;
  std::optional<PyException> exception;  // the loader's, else the main thread's
  std::optional<double> exception_t;
  bool uncaught = false;  // an exception reached sys.excepthook: Python exits 1
  bool oom = false;
  int64_t steps = 0;

  // When it failed: its first sign, the exception or the end.
  double When() const {
    if (exception_t && t) return std::min(*exception_t, *t);
    return t.value_or(exception_t.value_or(0));
  }
  bool Consequence() const { return sent_at && (!t || *sent_at <= *t + 1e-6); }
  bool Failed() const {
    if (Consequence()) return false;
    if (oom) return true;
    if (exit_code) return *exit_code != 0;  // a known status decides
    if (signal) return true;
    if (uncaught) return true;
    return gone && !bye;  // gone without Python's exit and without a status
  }
};

void NoteStop(const RankStop& s, RankEnd& e) {
  if (e.rank < 0) e.rank = s.rank;
  if (s.how == "exit" || s.how == "signal") {
    e.t = s.t;
    e.exit_code = s.exit_code;
    e.signal = s.signal;
  } else if (s.how == "gone") {
    e.gone = true;
    if (!e.t) e.t = s.t;
  } else if (s.how == "bye") {
    e.bye = true;
  } else if (s.how == "sent_signal" && s.signal) {
    if (!e.sent_at) e.sent_at = s.t;
    e.sent_signals.push_back(*s.signal);
  } else if (s.how == "exception" || s.how == "loader_error") {
    PyException x = ParseException(s.detail);
    if (x.where == "thread") return;  // a thread's end is not the rank's
    if (x.where == "main") e.uncaught = true;
    // The loader's report says more (the worker); the main one comes after.
    if (e.exception && e.exception->where == "loader") return;
    // A loader's exception the job caught leaves no mark unless the rank
    // then ends badly (Failed); its first one is kept.
    if (e.exception && x.where == "loader") return;
    e.exception = std::move(x);
    if (!e.exception_t) e.exception_t = s.t;
  }
}

std::map<int, RankEnd> CollectEnds(const Timeline& timeline) {
  std::map<int, RankEnd> ends;
  for (const RankInfo& r : timeline.ranks) {
    RankEnd& e = ends[r.pid];
    e.pid = r.pid;
    e.rank = r.rank;
    if (!r.hostname.empty()) e.host = r.hostname;
  }
  for (const RankStop& s : timeline.rank_stops) {
    RankEnd& e = ends[s.pid];
    e.pid = s.pid;
    NoteStop(s, e);
  }
  for (const MemoryPeak& p : timeline.memory_peaks) {
    if (p.source == "oom_kill" && ends.count(p.pid)) ends[p.pid].oom = true;
  }
  for (auto& [pid, e] : ends) {
    for (const StepEvent& s : timeline.steps) {
      if (s.rank == e.rank) e.steps = std::max(e.steps, s.step + 1);
    }
  }
  return ends;
}

// Every rank ended by one SIGINT/SIGTERM/SIGHUP within seconds, none sent by
// the launcher: a stop someone asked for.
bool AskedSignal(std::optional<int> sig) { return sig == 1 || sig == 2 || sig == 15; }

bool AskedToStop(const std::map<int, RankEnd>& ends, const RunInfo& info) {
  // The job `run` started ended by such a signal (a launcher passes it on,
  // or exits 128 + it): its ranks, gone with it, were asked too.
  const bool job_asked =
      AskedSignal(info.exit_signal) || (info.exit_code && AskedSignal(*info.exit_code - 128));
  std::optional<double> first, last;
  int stopped = 0;
  for (const auto& [pid, e] : ends) {
    if (e.rank < 0) continue;
    const bool asked = AskedSignal(e.signal) || (job_asked && e.gone && !e.exit_code && !e.signal);
    if (!asked || e.sent_at) return false;
    ++stopped;
    first = std::min(first.value_or(e.When()), e.When());
    last = std::max(last.value_or(e.When()), e.When());
  }
  return stopped > 0 && *last - *first <= kTogetherSeconds;
}

std::string HowItEnded(const RankEnd& e) {
  if (e.oom) return "was killed by the kernel's OOM killer";
  if (e.exception && e.exception->where == "loader") {
    if (std::optional<LoaderWorkerDeath> w = ParseLoaderWorkerDeath(e.exception->message)) {
      return fmt::format("stopped when its DataLoader worker (pid {}) died{}",
                         w->pids.empty() ? std::string("?") : std::to_string(w->pids[0]),
                         w->signal.empty() ? "" : " (" + w->signal + ")");
    }
    return fmt::format(
        "stopped on {} raised by its DataLoader (a worker that died leaves this "
        "too): {}",
        e.exception->type, e.exception->message);
  }
  if (e.exception) {
    return fmt::format("raised {}: {} (at {})", e.exception->type, e.exception->message,
                       e.exception->frame);
  }
  if (e.signal) return "was killed by " + SignalName(*e.signal);
  if (e.exit_code) return fmt::format("exited with status {}", *e.exit_code);
  return "vanished without Python's exit (killed by a signal or crashed; its status is its "
         "launcher's to tell)";
}

// Where another rank was when `dead` stopped: the rows `run` took then, else
// its steps.
std::string OtherState(const Timeline& timeline, const RankEnd& other, double t_dead) {
  const RankState* at = nullptr;
  for (const RankState& s : timeline.rank_states) {
    if (s.reason == "death" && s.pid == other.pid && s.t >= t_dead - 1e-3 && s.t <= t_dead + 5) {
      at = &s;
      break;
    }
  }
  std::string text = fmt::format("rank {}", other.rank);
  if (at && at->collective_since_t) {
    text += fmt::format(" waited in a gradient all-reduce since {:.1f} s (after {} steps)",
                        *at->collective_since_t, at->steps);
  } else if (at) {
    text += fmt::format(
        " had finished {} steps{}", at->steps,
        at->last_step_t ? fmt::format(", the last at {:.1f} s", *at->last_step_t) : std::string());
  } else {
    text += fmt::format(" had finished {} steps", other.steps);
  }
  if (other.Consequence()) {
    const bool killed = std::count(other.sent_signals.begin(), other.sent_signals.end(), 9) > 0;
    text += killed ? "; the launcher then sent it SIGTERM and, as it did not end, SIGKILL"
                   : "; the launcher then ended it (SIGTERM)";
  }
  return text;
}

std::string NextFor(const RankEnd& e) {
  if (e.exception && e.exception->where == "loader") {
    return "a DataLoader worker died: look for the OOM killer (`dmesg -T | grep -i killed`) and "
           "lower num_workers or prefetch_factor; rerun with num_workers=0 to see the worker's "
           "own error";
  }
  if (e.exception) return "fix the exception at " + e.exception->frame;
  if (e.signal == 9) {
    return "a SIGKILL not from the OOM killer comes from outside the job: the scheduler's "
           "limits (`sacct -j JOBID`), a user's kill, the node's watchdog; check `dmesg -T`";
  }
  if (e.signal == 11 || e.signal == 6 || e.signal == 7) {
    return "a crash in native code: rerun that rank with `python3 -X faulthandler` (or under "
           "gdb) for its stack";
  }
  return fmt::format("read rank {}'s own output for its error", e.rank);
}

Finding DiedFinding(const Timeline& timeline, const std::map<int, RankEnd>& ends,
                    const RankEnd& dead) {
  Finding f;
  f.id = dead.oom ? "memory.oom_killed" : "distributed.rank_died";
  f.layer = dead.oom ? Layer::kMemory : Layer::kDistributed;
  f.severity = Severity::kCritical;
  std::vector<std::string> others;
  for (const auto& [pid, e] : ends) {
    if (pid != dead.pid && e.rank >= 0) others.push_back(OtherState(timeline, e, dead.When()));
  }
  f.summary =
      fmt::format("rank {} (pid {}{}) {} after {} steps, {:.1f} s into the run{}{}", dead.rank,
                  dead.pid, dead.host.empty() ? "" : " on " + dead.host, HowItEnded(dead),
                  dead.steps, dead.When(), others.empty() ? "" : "; ", Join(others, "; "));
  f.evidence = {{"rank", int64_t{dead.rank}},
                {"pid", int64_t{dead.pid}},
                {"steps_done", dead.steps},
                {"t_s", dead.When()}};
  if (!dead.host.empty()) f.evidence.push_back({"host", dead.host});
  if (dead.signal) f.evidence.push_back({"signal", SignalName(*dead.signal)});
  if (dead.exit_code) f.evidence.push_back({"exit_code", int64_t{*dead.exit_code}});
  f.evidence.push_back({"oom_killed", dead.oom});
  if (dead.exception) {
    f.evidence.push_back({"exception_type", dead.exception->type});
    f.evidence.push_back({"exception_message", dead.exception->message});
    f.evidence.push_back({"exception_frame", dead.exception->frame});
    f.evidence.push_back({"raised_in", dead.exception->where});
  }
  if (!others.empty()) f.evidence.push_back({"others", Join(others, "; ")});
  f.next = NextFor(dead);
  return f;
}

bool Waits(const RankState& s) {
  return s.collective_since_t.has_value() ||
         s.stack.find("/torch/distributed/") != std::string::npos;
}

std::string Stopped(const RankState& s) {
  std::string text = fmt::format("rank {} stopped at {}", s.rank,
                                 s.frame.empty() ? "(no stack: the hook armed none)" : s.frame);
  std::vector<std::string> seen;
  if (!s.state.empty()) seen.push_back("state " + s.state);
  if (!s.wchan.empty()) seen.push_back("in " + s.wchan);
  if (s.cpu_seconds)
    seen.push_back(fmt::format("{:.2f} s of CPU between the looks", *s.cpu_seconds));
  if (s.stack_unchanged == true) seen.push_back("the same stack both times");
  return seen.empty() ? text : text + " (" + Join(seen, ", ") + ")";
}

struct HangSeen {
  Finding finding;
  double t = 0;
};

// The first hang `run` found: the rows of its second look.
std::optional<HangSeen> CheckHang(const Timeline& timeline) {
  std::vector<const RankState*> rows;
  for (const RankState& s : timeline.rank_states) {
    if (s.reason == "hang" && (rows.empty() || s.t - rows.front()->t < 1.0)) rows.push_back(&s);
  }
  if (rows.empty()) return std::nullopt;
  std::vector<std::string> stopped, waiting, stopped_ranks, waiting_ranks;
  std::optional<double> last_step;
  const RankState* culprit = nullptr;
  for (const RankState* s : rows) {
    if (s->last_step_t) last_step = std::max(last_step.value_or(*s->last_step_t), *s->last_step_t);
    if (Waits(*s)) {
      waiting_ranks.push_back(std::to_string(s->rank));
      waiting.push_back(
          s->collective_since_t
              ? fmt::format("rank {} waits in a gradient all-reduce since {:.1f} s", s->rank,
                            *s->collective_since_t)
              : fmt::format("rank {} waits in torch.distributed at {}", s->rank, s->frame));
    } else {
      stopped_ranks.push_back(std::to_string(s->rank));
      stopped.push_back(Stopped(*s));
      if (!culprit) culprit = s;
    }
  }
  HangSeen seen;
  seen.t = rows.front()->t;
  Finding& f = seen.finding;
  f.id = "distributed.hang";
  f.layer = Layer::kDistributed;
  f.severity = Severity::kCritical;
  std::vector<std::string> parts = stopped;
  parts.insert(parts.end(), waiting.begin(), waiting.end());
  f.summary =
      fmt::format("the job hung: no rank finished a step after {}; {}{}",
                  last_step ? fmt::format("{:.1f} s", *last_step) : std::string("its start"),
                  stopped.empty() ? "every rank waits in a collective: " : "", Join(parts, "; "));
  f.evidence = {{"hang_found_s", seen.t}};
  if (last_step) f.evidence.push_back({"last_step_s", *last_step});
  f.evidence.push_back({"stopped_ranks", Join(stopped_ranks, ",")});
  f.evidence.push_back({"waiting_ranks", Join(waiting_ranks, ",")});
  for (const RankState* s : rows) {
    const std::string r = "rank" + std::to_string(s->rank) + "_";
    f.evidence.push_back({r + "pid", int64_t{s->pid}});
    f.evidence.push_back({r + "steps", s->steps});
    if (!s->frame.empty()) f.evidence.push_back({r + "frame", s->frame});
    if (!s->state.empty()) f.evidence.push_back({r + "state", s->state});
    if (!s->wchan.empty()) f.evidence.push_back({r + "wchan", s->wchan});
    if (s->cpu_seconds) f.evidence.push_back({r + "cpu_s", *s->cpu_seconds});
    if (s->collective_since_t)
      f.evidence.push_back({r + "collective_since_s", *s->collective_since_t});
  }
  f.next = culprit
               ? fmt::format(
                     "read rank {}'s every thread in RUN.db.stacks/rank-{}.{}.txt; for "
                     "native frames `py-spy dump --native --pid {}`",
                     culprit->rank, culprit->rank, culprit->pid, culprit->pid)
               : "the ranks wait in different collectives, or for a peer that is gone: rerun with "
                 "TORCH_DISTRIBUTED_DEBUG=DETAIL; with NCCL, read its Flight Recorder dumps "
                 "(`stallscope hang DIR`)";
  return seen;
}

}  // namespace

std::optional<LoaderWorkerDeath> ParseLoaderWorkerDeath(std::string_view message) {
  const size_t at = message.find("DataLoader worker (pid");
  if (at == std::string_view::npos) return std::nullopt;
  LoaderWorkerDeath w;
  std::string_view rest = message.substr(at + 22);
  if (rest.substr(0, 3) == "(s)") rest.remove_prefix(3);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == ',')) {
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == ',')) rest.remove_prefix(1);
    int pid = 0;
    const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), pid);
    if (ec != std::errc()) break;
    if (w.pids.size() < 64) w.pids.push_back(pid);
    rest = rest.substr(static_cast<size_t>(end - rest.data()));
  }
  const size_t by = message.find("killed by signal: ");
  if (by != std::string_view::npos) {
    std::string_view sig = message.substr(by + 18);
    sig = sig.substr(0, sig.find_first_of(".\n"));
    w.signal = std::string(Trim(sig));
  }
  return w;
}

FindingsWithNotes CheckRankStops(const Timeline& timeline) {
  FindingsWithNotes out;
  if (!timeline.rank_stops_recorded) {
    out.notes.push_back(
        "distributed: the run file predates tables rank_stops and rank_states: a rank that died "
        "or hung is not named");
    return out;
  }
  std::optional<HangSeen> hang = CheckHang(timeline);
  const std::map<int, RankEnd> ends = CollectEnds(timeline);
  const RankEnd* first = nullptr;
  for (const auto& [pid, e] : ends) {
    if (e.rank < 0 || !e.Failed()) continue;
    if (!first || e.When() < first->When()) first = &e;
  }
  const double hang_t = hang ? hang->t : 1e300;
  // The OOM kill of the job `run` started is memory.oom_killed already.
  const bool told = first && first->oom && timeline.info.oom_killed;
  if (first && !told && !AskedToStop(ends, timeline.info) && first->When() < hang_t) {
    out.findings.push_back(DiedFinding(timeline, ends, *first));
  }
  if (hang) out.findings.push_back(std::move(hang->finding));
  return out;
}

}  // namespace stallscope
