// Where a run's wall time went (see time_breakdown.h). One sweep per rank
// over its steps in time order: each step's length goes to data wait,
// communication, host syncs and compute (less the checkpoints and
// evaluation loops inside it), each gap between steps to the spans inside
// it and the rest to start-up, epoch ends, idle gaps or the time after the
// last step. A gap or an overlong step with no checkpoint span but large
// writes by the rank is a checkpoint the job did not mark.
#include "analyze/run/time_breakdown.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

namespace stallscope {
namespace {

// A rank's spans of one kind each, in time order, none overlapping the one
// before (a checkpoint inside an evaluation loop counts once, for the loop).
struct Span {
  double start = 0, end = 0;
  TimeRow row = TimeRow::kCheckpoints;
};

std::vector<Span> RankSpans(const Timeline& timeline, int rank, double wall) {
  std::vector<Span> spans;
  for (const PhaseSpan& s : timeline.spans) {
    if (s.rank != rank || s.kind == "profile") continue;  // its writes only: RankWrites
    const double start = std::clamp(s.start_t, 0.0, wall), end = std::clamp(s.end_t, 0.0, wall);
    if (end <= start) continue;
    spans.push_back({start, end, s.kind == "eval" ? TimeRow::kEvaluation : TimeRow::kCheckpoints});
  }
  // Evaluation first at equal starts, so a checkpoint inside it is cut away.
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    if (a.start != b.start) return a.start < b.start;
    return a.row == TimeRow::kEvaluation && b.row != TimeRow::kEvaluation;
  });
  std::vector<Span> kept;
  for (Span s : spans) {
    if (!kept.empty()) s.start = std::max(s.start, kept.back().end);
    if (s.end > s.start) kept.push_back(s);
  }
  return kept;
}

// The seconds of the spans within [a, b], by row; `from` is the first span
// that may still overlap (the sweep moves forward only).
struct Overlap {
  double checkpoints = 0, evaluation = 0;
  double total() const { return checkpoints + evaluation; }
};

Overlap OverlapOf(const std::vector<Span>& spans, size_t& from, double a, double b) {
  Overlap out;
  while (from < spans.size() && spans[from].end <= a) ++from;
  for (size_t i = from; i < spans.size() && spans[i].start < b; ++i) {
    const double s = std::max(a, spans[i].start), e = std::min(b, spans[i].end);
    if (e <= s) continue;
    (spans[i].row == TimeRow::kEvaluation ? out.evaluation : out.checkpoints) += e - s;
  }
  return out;
}

// A rank's writes to storage, per sampled interval of its processes: the
// bytes it dirtied over (a, b]. Sorted by start; no interval is longer than
// `longest`.
struct Written {
  double a = 0, b = 0, bytes = 0;
  bool claimed = false;  // by a checkpoint already (a span's, or one found by its writes)
};
struct RankWrites {
  std::vector<Written> intervals;
  double longest = 0;

  // The bytes of the unclaimed intervals that overlap [a, b] at all: a
  // sample interval cannot place its bytes more finely.
  double Within(double a, double b) const {
    auto it = std::lower_bound(intervals.begin(), intervals.end(), a - longest,
                               [](const Written& w, double t) { return w.a < t; });
    double bytes = 0;
    for (; it != intervals.end() && it->a < b; ++it) {
      if (it->b > a && !it->claimed) bytes += it->bytes;
    }
    return bytes;
  }

  // Those intervals' bytes are one save's: no other stretch counts them.
  void Claim(double a, double b) {
    auto it = std::lower_bound(intervals.begin(), intervals.end(), a - longest,
                               [](const Written& w, double t) { return w.a < t; });
    for (; it != intervals.end() && it->a < b; ++it) {
      if (it->b > a) it->claimed = true;
    }
  }

  // A save the rank wrote enough for in [a, b]: claims its intervals.
  bool SavedIn(double a, double b) {
    if (Within(a, b) < kCheckpointWriteBytes) return false;
    Claim(a, b);
    return true;
  }

  // The part of [a, b] the intervals that wrote cover: where in a gap the
  // save can have been, at the sampling's resolution.
  double Covered(double a, double b) const {
    auto it = std::lower_bound(intervals.begin(), intervals.end(), a - longest,
                               [](const Written& w, double t) { return w.a < t; });
    double first = b, last = a;
    for (; it != intervals.end() && it->a < b; ++it) {
      if (it->b <= a) continue;
      first = std::min(first, std::max(a, it->a));
      last = std::max(last, std::min(b, it->b));
    }
    return std::max(0.0, last - first);
  }
};

RankWrites WritesOf(const Timeline& timeline, int rank) {
  RankWrites out;
  std::set<int> pids;
  for (const RankInfo& r : timeline.ranks) {
    if (r.rank == rank && r.pid > 0) pids.insert(r.pid);
  }
  std::map<int, double> last;  // pid -> its previous sample
  for (const ProcessPoint& p : timeline.processes) {
    if (!pids.count(p.pid)) continue;
    auto it = last.find(p.pid);
    if (it != last.end() && p.write_kib_per_s && *p.write_kib_per_s > 0 && p.t > it->second) {
      out.intervals.push_back({it->second, p.t, *p.write_kib_per_s * 1024.0 * (p.t - it->second)});
      out.longest = std::max(out.longest, p.t - it->second);
    }
    last[p.pid] = p.t;
  }
  std::sort(out.intervals.begin(), out.intervals.end(),
            [](const Written& x, const Written& y) { return x.a < y.a; });
  // The writes inside a checkpoint span are that checkpoint's, those while
  // run --profile wrote its trace the trace's: neither is another save.
  for (const PhaseSpan& s : timeline.spans) {
    if (s.rank == rank && s.kind != "eval") out.Claim(s.start_t, s.end_t);
  }
  return out;
}

// An epoch mark of this rank within [a, b] (with a millisecond's slack: the
// mark is sent just before the loop whose first next() starts the gap's end).
bool EpochMarkWithin(const std::vector<double>& marks, double a, double b) {
  constexpr double kSlack = 1e-3;
  auto it = std::lower_bound(marks.begin(), marks.end(), a - kSlack);
  return it != marks.end() && *it <= b + kSlack;
}

// A gap [a, b] between steps: its spans to their rows, the rest to `rest`.
// Where the gap has no checkpoint span and the rank wrote a checkpoint's
// worth in it (never the start-up: a job's first writes are its set-up's,
// a dataset cache or a log), the part the writing intervals cover is a
// checkpoint.
void AddGap(RankTime& r, const std::vector<Span>& spans, size_t& from, RankWrites& writes, double a,
            double b, TimeRow rest) {
  if (b <= a) return;
  const Overlap o = OverlapOf(spans, from, a, b);
  r.at(TimeRow::kCheckpoints) += o.checkpoints;
  r.at(TimeRow::kEvaluation) += o.evaluation;
  double left = std::max(0.0, (b - a) - o.total());
  if (left >= kCheckpointGapSeconds && rest != TimeRow::kStartup && o.checkpoints == 0 &&
      writes.SavedIn(a, b)) {
    const double saved = std::clamp(writes.Covered(a, b) - o.evaluation, 0.0, left);
    r.at(TimeRow::kCheckpoints) += saved;
    left -= saved;
    ++r.checkpoints_by_writes;
  }
  r.at(rest) += left;
}

// Per rank and step, the time its gradient all-reduces waited for the last
// rank to launch them: for each bucket, from its own launch to the last
// launch (cut at its own completion), the union over the step's buckets.
// Only for buckets whose records hold every rank once (gloo's bucket
// records, one host's file of the whole job); nullopt where none does.
using StepKey = std::pair<int, int64_t>;  // rank, step

std::optional<std::map<StepKey, double>> RankWaits(const Timeline& timeline, size_t ranks) {
  if (timeline.bucket_syncs.empty()) return std::nullopt;
  std::map<std::pair<int64_t, int>, std::vector<const BucketSync*>> by_bucket;
  for (const BucketSync& b : timeline.bucket_syncs) by_bucket[{b.step, b.bucket}].push_back(&b);
  std::map<StepKey, std::vector<std::pair<double, double>>> spans;
  size_t split = 0;
  for (const auto& [key, rows] : by_bucket) {
    // Each rank once (a bucket reduced twice in a step, by two models or
    // two backward passes, or a rank's records missing): not split.
    std::set<int> seen;
    for (const BucketSync* b : rows) seen.insert(b->rank);
    if (rows.size() != ranks || seen.size() != ranks) continue;
    ++split;
    double arrival = rows.front()->launch_seconds;
    for (const BucketSync* b : rows) arrival = std::max(arrival, b->launch_seconds);
    for (const BucketSync* b : rows) {
      const double end = std::min(arrival, b->done_seconds);
      if (end > b->launch_seconds) spans[{b->rank, b->step}].push_back({b->launch_seconds, end});
    }
  }
  if (split == 0) return std::nullopt;
  std::map<StepKey, double> out;
  for (auto& [key, list] : spans) {
    std::sort(list.begin(), list.end());
    double total = 0, at = list.front().first;
    for (const auto& [a, b] : list) {
      const double from = std::max(a, at);
      if (b > from) total += b - from;
      at = std::max(at, b);
    }
    out[key] = total;
  }
  return out;
}

// What a rank's records say of each step, by step number.
struct StepRecords {
  std::map<int64_t, double> sync;    // all-reduces outstanding (stallscope.ddp)
  std::map<int64_t, HostSync> host;  // blocked on the GPU
};

StepRecords RecordsOf(const Timeline& timeline, int rank) {
  StepRecords out;
  for (const StepSync& s : timeline.step_syncs) {
    if (s.rank == rank) out.sync[s.step] = s.sync_seconds;
  }
  for (const HostSync& h : timeline.host_syncs) {
    if (h.rank == rank) out.host[h.step] = h;
  }
  return out;
}

// The median of a rank's step compute (length less data wait and host
// syncs), the yardstick of an overlong step; 0 with no step.
double MedianCompute(const std::vector<const StepEvent*>& steps, const StepRecords& records) {
  std::vector<double> compute;
  compute.reserve(steps.size());
  for (const StepEvent* e : steps) {
    auto h = records.host.find(e->step);
    const double held = h == records.host.end() ? 0.0 : std::max(0.0, h->second.seconds);
    compute.push_back(std::max(0.0, e->step_seconds - std::max(0.0, e->wait_seconds) - held));
  }
  if (compute.empty()) return 0;
  auto mid = compute.begin() + static_cast<std::ptrdiff_t>(compute.size() / 2);
  std::nth_element(compute.begin(), mid, compute.end());
  return *mid;
}

RankTime BreakDownRank(const Timeline& timeline, int rank, std::vector<const StepEvent*>& steps,
                       double wall, const std::map<StepKey, double>& rank_waits) {
  RankTime r;
  r.rank = rank;
  r.wall_s = wall;
  const StepRecords records = RecordsOf(timeline, rank);
  std::vector<double> marks;
  for (const EpochEvent& e : timeline.epochs) {
    if (e.rank == rank) marks.push_back(e.t);
  }
  std::sort(marks.begin(), marks.end());
  const std::vector<Span> spans = RankSpans(timeline, rank, wall);
  for (const PhaseSpan& s : timeline.spans) {
    if (s.rank == rank && s.kind == "eval") ++r.eval_loops;
    if (s.rank == rank && s.kind == "checkpoint") ++r.checkpoints;
  }
  RankWrites writes = WritesOf(timeline, rank);
  const double median_compute = MedianCompute(steps, records);
  size_t from = 0;
  double at = 0;  // where the last step ended
  for (const StepEvent* e : steps) {
    const double end = std::clamp(e->t, at, wall);
    const double start = std::clamp(e->t - std::max(0.0, e->step_seconds), at, end);
    const TimeRow gap = r.steps == 0                        ? TimeRow::kStartup
                        : EpochMarkWithin(marks, at, start) ? TimeRow::kEpochEnds
                                                            : TimeRow::kIdleGaps;
    AddGap(r, spans, from, writes, at, start, gap);
    const double length = end - start;
    const double wait = std::clamp(e->wait_seconds, 0.0, length);
    auto it = records.sync.find(e->step);
    const double synced =
        it == records.sync.end() ? 0.0 : std::clamp(it->second, 0.0, length - wait);
    auto waited = rank_waits.find({rank, e->step});
    const double rank_wait =
        waited == rank_waits.end() ? 0.0 : std::clamp(waited->second, 0.0, synced);
    const double comm = synced - rank_wait;
    // A checkpoint or evaluation loop run inside a step (between two
    // next() calls) is its own row, taken from the step's compute.
    const Overlap o = OverlapOf(spans, from, start, end);
    double compute = std::max(0.0, (length - wait) - synced);
    const double taken = std::clamp(o.total(), 0.0, compute);
    const double scale = o.total() > 0 ? taken / o.total() : 0.0;
    r.at(TimeRow::kCheckpoints) += o.checkpoints * scale;
    r.at(TimeRow::kEvaluation) += o.evaluation * scale;
    compute -= taken;
    if (auto h = records.host.find(e->step); h != records.host.end()) {
      const double blocked = std::clamp(h->second.seconds, 0.0, compute);
      r.at(TimeRow::kHostSyncs) += blocked;
      r.host_sync_calls += h->second.calls;
      compute -= blocked;
    }
    // A step far longer than the rank's usual one that wrote a checkpoint's
    // worth, with no span of its own: a save inside the loop. Never a
    // loop's first step (warm-up, compilation, caches written).
    const bool first_of_loop = r.steps == 0 || start > at + 1e-6;
    if (!first_of_loop && o.checkpoints == 0 && median_compute > 0 &&
        compute > kCheckpointStepFactor * median_compute && writes.SavedIn(start, end)) {
      r.at(TimeRow::kCheckpoints) += compute - median_compute;
      compute = median_compute;
      ++r.checkpoints_by_writes;
    }
    r.at(TimeRow::kDataWait) += wait;
    r.at(TimeRow::kRankWait) += rank_wait;
    r.at(TimeRow::kCommunication) += comm;
    r.at(TimeRow::kCompute) += compute;
    ++r.steps;
    at = end;
  }
  AddGap(r, spans, from, writes, at, wall, TimeRow::kAfterLastStep);
  return r;
}

}  // namespace

TimeBreakdown BreakDownTime(const Timeline& timeline) {
  TimeBreakdown out;
  std::map<int, std::vector<const StepEvent*>> by_rank;
  for (const StepEvent& s : timeline.steps) by_rank[s.rank].push_back(&s);
  if (by_rank.empty()) return out;
  double wall = timeline.info.duration_seconds.value_or(
      timeline.samples.empty() ? 0.0 : timeline.samples.back().t);
  for (const StepEvent& s : timeline.steps) wall = std::max(wall, s.t);
  for (const PhaseSpan& s : timeline.spans) wall = std::max(wall, s.end_t);
  std::map<int, std::string> hosts;
  for (const RankInfo& r : timeline.ranks) {
    if (!r.hostname.empty()) hosts[r.rank] = r.hostname;
  }
  // Every rank of the job in this file (one host's job, or a run without
  // distribution): the bucket records can split communication.
  int world = 1;
  for (const RankInfo& r : timeline.ranks) world = std::max(world, r.world_size);
  const std::optional<std::map<StepKey, double>> split =
      static_cast<size_t>(world) == by_rank.size() ? RankWaits(timeline, by_rank.size())
                                                   : std::nullopt;
  const std::map<StepKey, double> rank_waits = split.value_or(std::map<StepKey, double>{});
  for (auto& [rank, steps] : by_rank) {
    std::stable_sort(steps.begin(), steps.end(),
                     [](const StepEvent* a, const StepEvent* b) { return a->t < b->t; });
    RankTime r = BreakDownRank(timeline, rank, steps, wall, rank_waits);
    auto it = hosts.find(rank);
    r.host = it != hosts.end() ? it->second : timeline.info.hostname;
    out.ranks.push_back(std::move(r));
  }
  if (!timeline.spans_recorded) {
    out.notes.push_back(
        "the run file predates checkpoint and evaluation spans: their time is in compute or the "
        "gaps");
  }
  int64_t by_writes = 0;
  for (const RankTime& r : out.ranks) by_writes += r.checkpoints_by_writes;
  if (by_writes > 0) {
    out.notes.push_back(
        "checkpoints found by their writes (16 MiB or more to storage in a gap or an overlong "
        "step, no stallscope.checkpoint() there), timed to the sample interval; wrap the save "
        "in stallscope.checkpoint() for its exact time");
  }
  bool writes_read = false;
  for (const ProcessPoint& p : timeline.processes) writes_read = writes_read || p.write_kib_per_s;
  if (!timeline.processes.empty() && !writes_read) {
    out.notes.push_back(
        "the run file has no process writes: a checkpoint outside stallscope.checkpoint() is in "
        "the row where it happened");
  }
  if (!timeline.host_syncs_recorded && !timeline.gpus.empty()) {
    out.notes.push_back(
        "the run file predates host syncs: time the loop waited for the GPU (.item(), "
        "synchronize()) is in compute");
  }
  if (timeline.step_syncs.empty() && by_rank.size() > 1) {
    out.notes.push_back(
        "no gradient sync records (stallscope.ddp): communication inside a step counts as "
        "compute");
  } else if (by_rank.size() > 1 && !split) {
    out.notes.push_back(
        "communication includes the wait for other ranks: splitting them needs the gradient "
        "buckets of every rank in one file (gloo, one host)");
  }
  return out;
}

void JoinTimes(TimeBreakdown& into, TimeBreakdown from) {
  for (RankTime& r : from.ranks) into.ranks.push_back(std::move(r));
  std::stable_sort(into.ranks.begin(), into.ranks.end(),
                   [](const RankTime& a, const RankTime& b) { return a.rank < b.rank; });
  for (std::string& n : from.notes) {
    if (std::find(into.notes.begin(), into.notes.end(), n) == into.notes.end()) {
      into.notes.push_back(std::move(n));
    }
  }
}

std::vector<TimeRowChange> CompareTime(const RankTime& before, const RankTime& after) {
  std::vector<TimeRowChange> out;
  for (const TimeRowName& row : kTimeRows) {
    out.push_back({row.row, before.at(row.row), after.at(row.row)});
  }
  return out;
}

}  // namespace stallscope
