// Several nodes' run files as one job: see job_analysis.h.
#include "analyze/run/job_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <set>

#include "analyze/run/node_rules.h"
#include "analyze/run/rank_rules.h"
#include "analyze/run/rules.h"
#include "core/text.h"

namespace stallscope {
namespace {

// "2026-11-29T18:40:00Z" as seconds since the epoch; nullopt otherwise.
std::optional<double> UtcSeconds(const std::string& text) {
  struct tm tm {};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  return static_cast<double>(timegm(&tm));
}

// Where a file's t = 0 is in node 0's wall time.
struct FileClock {
  double start = 0;  // seconds since the epoch, on node 0's clock
  double end = 0;    // the last sample, likewise
  bool known = false;
};

FileClock ClockOf(const RunAnalysis& run) {
  FileClock c;
  const Timeline& t = run.timeline;
  if (t.node && t.node->start_realtime_seconds > 0) {
    c.start = t.node->start_realtime_seconds - t.node->clock_offset_seconds.value_or(0);
    c.known = true;
  } else if (std::optional<double> utc = UtcSeconds(t.info.started_utc)) {
    c.start = *utc;
    c.known = true;
  }
  double last = t.samples.empty() ? 0 : t.samples.back().t;
  c.end = c.start + std::max(last, t.info.duration_seconds.value_or(0));
  return c;
}

std::string JobName(const NodeInfo& n) {
  return fmt::format("master {}:{}, {} ranks", n.master_addr.empty() ? "?" : n.master_addr,
                     n.master_port ? std::to_string(*n.master_port) : "?",
                     n.world_size ? std::to_string(*n.world_size) : "?");
}

// Every global rank a file holds steps of.
std::set<int> RanksIn(const Timeline& t) {
  std::set<int> ranks;
  for (const StepEvent& s : t.steps) ranks.insert(s.rank);
  return ranks;
}

// Files of different jobs, or a rank in two files: the error, naming them.
Status CheckOneJob(const std::vector<RunAnalysis>& nodes, const std::vector<FileClock>& clocks) {
  std::map<int, size_t> owner;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (nodes[i].path == nodes[j].path) {
        return Status::InvalidArgument(nodes[i].path + " is named twice");
      }
      const std::optional<NodeInfo>& a = nodes[j].timeline.node;
      const std::optional<NodeInfo>& b = nodes[i].timeline.node;
      if (a && b) {
        bool both_placed =
            a->world_size && b->world_size && !a->master_addr.empty() && !b->master_addr.empty();
        if (both_placed && (a->master_addr != b->master_addr || a->master_port != b->master_port ||
                            a->world_size != b->world_size)) {
          return Status::InvalidArgument(
              fmt::format("{} and {} are of different jobs ({}; {}): nothing merged", nodes[j].path,
                          nodes[i].path, JobName(*a), JobName(*b)));
        }
        if (!a->launcher_job.empty() && !b->launcher_job.empty() &&
            a->launcher_job != b->launcher_job) {
          return Status::InvalidArgument(
              fmt::format("{} and {} are of different SLURM jobs ({} and {}): nothing merged",
                          nodes[j].path, nodes[i].path, a->launcher_job, b->launcher_job));
        }
      }
      if (clocks[i].known && clocks[j].known &&
          (clocks[i].start > clocks[j].end + kJobOverlapSlackSeconds ||
           clocks[j].start > clocks[i].end + kJobOverlapSlackSeconds)) {
        return Status::InvalidArgument(fmt::format(
            "{} ({}) and {} ({}) did not record at the same time: not one job, nothing merged",
            nodes[j].path, nodes[j].timeline.info.started_utc, nodes[i].path,
            nodes[i].timeline.info.started_utc));
      }
    }
    for (int rank : RanksIn(nodes[i].timeline)) {
      auto [at, inserted] = owner.emplace(rank, i);
      if (!inserted) {
        return Status::InvalidArgument(fmt::format(
            "rank {} has steps in both {} and {}: two files claim it (of two jobs, or one file "
            "twice?); nothing merged",
            rank, nodes[at->second].path, nodes[i].path));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

NodeRow DescribeNode(const RunAnalysis& run) {
  const Timeline& t = run.timeline;
  NodeRow row;
  row.path = run.path;
  row.host = t.info.hostname;
  if (t.node) {
    row.node_rank = t.node->node_rank;
    row.clock_offset_seconds = t.node->clock_offset_seconds;
  }
  for (int r : RanksIn(t)) row.ranks.push_back(r);
  // The node's ranks, as SummarizeRanks counts their steps.
  double step = 0, wait = 0, sync = 0;
  bool have_sync = false;
  for (const RankSummary& r : run.ranks) {
    step += r.step_s;
    wait += r.data_wait_s;
    if (r.sync_wait_s) {
      sync += *r.sync_wait_s;
      have_sync = true;
    }
  }
  if (step > 0) {
    row.data_wait_fraction = wait / step;
    if (have_sync) row.sync_wait_fraction = sync / step;
  }
  if (!run.ranks.empty() && run.ranks.front().step_s > 0) {
    row.steps_per_s = 1.0 / run.ranks.front().step_s;
  }
  row.data_device = t.info.data_device;
  if (t.node) row.net_interface = t.node->net_interface;
  NodeReceive receive = ReceiveWhileSyncing(t);
  row.receive_bytes_per_s = receive.bytes_per_s;
  row.receive_during_sync = receive.during_sync;
  double n = 0;
  for (const TimelineSample& s : t.samples) {
    row.peak_tree_rss_bytes = std::max(row.peak_tree_rss_bytes, s.tree_rss_bytes);
    row.swap_pages_per_s += s.swap_in_pages_per_s + s.swap_out_pages_per_s;
    row.disk_util_pct += s.disk_util_percent;
    row.disk_await_ms += s.disk_await_ms;
    row.cpu_pct += s.cpu_busy_percent;
    n += 1;
  }
  if (n > 0) {
    row.swap_pages_per_s /= n;
    row.disk_util_pct /= n;
    row.disk_await_ms /= n;
    row.cpu_pct /= n;
  }
  return row;
}

namespace {

// A node's own finding, said of its host: "node-b: ..." with `host` first
// in the evidence.
Finding OfHost(Finding f, const std::string& host) {
  f.summary = host + ": " + f.summary;
  f.evidence.insert(f.evidence.begin(), Evidence{"host", host});
  return f;
}

// Node rank order (files without one after, by host, then path).
std::tuple<int, std::string, std::string> JobOrder(const RunAnalysis& r) {
  std::optional<int> rank = r.timeline.node ? r.timeline.node->node_rank : std::nullopt;
  return std::make_tuple(rank.value_or(1 << 30), r.timeline.info.hostname, r.path);
}

template <typename T>
void Drop(std::vector<T>& v) {
  std::vector<T>().swap(v);
}

// Steps by when they ended (a function object: the sorts and merges inline it).
constexpr auto EndsBefore = [](const StepEvent& a, const StepEvent& b) { return a.t < b.t; };

// A file's steps in time order, as a stable sort leaves them (a recorder
// writes them so: usually nothing to do).
void InTimeOrder(std::vector<StepEvent>& steps) {
  if (!std::is_sorted(steps.begin(), steps.end(), EndsBefore)) {
    std::stable_sort(steps.begin(), steps.end(), EndsBefore);
  }
}

// Runs of steps each in time order (one a node, ending at `ends`) merged
// pairwise into one, as a stable sort of the whole would leave them: the
// earlier run first among equal times.
void MergeByTime(std::vector<StepEvent>& steps, std::vector<size_t> ends) {
  std::vector<size_t> starts;
  size_t begin = 0;
  for (size_t end : ends) {
    starts.push_back(begin);
    begin = end;
  }
  while (starts.size() > 1) {
    std::vector<size_t> merged_starts, merged_ends;
    for (size_t i = 0; i < starts.size(); i += 2) {
      if (i + 1 == starts.size()) {
        merged_starts.push_back(starts[i]);
        merged_ends.push_back(ends[i]);
        continue;
      }
      std::inplace_merge(steps.begin() + static_cast<std::ptrdiff_t>(starts[i]),
                         steps.begin() + static_cast<std::ptrdiff_t>(starts[i + 1]),
                         steps.begin() + static_cast<std::ptrdiff_t>(ends[i + 1]), EndsBefore);
      merged_starts.push_back(starts[i]);
      merged_ends.push_back(ends[i + 1]);
    }
    starts = std::move(merged_starts);
    ends = std::move(merged_ends);
  }
}

}  // namespace

bool KeepWhatTheJobNeeds(RunAnalysis& node) {
  Timeline& t = node.timeline;
  if (!t.node || t.node->node_rank.value_or(0) == 0) return false;
  t.inputs_recorded = false;
  Drop(t.processes);
  Drop(t.other_processes);
  Drop(t.gpus);
  Drop(t.port_counters);
  Drop(t.allocations);
  Drop(t.inputs);
  return true;
}

size_t FirstNodeOfJob(const std::vector<RunAnalysis>& nodes) {
  size_t first = 0;
  for (size_t i = 1; i < nodes.size(); ++i) {
    if (JobOrder(nodes[i]) < JobOrder(nodes[first])) first = i;
  }
  return first;
}

std::string RankRangeText(const std::vector<int>& ranks) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    parts.push_back(i == j ? std::to_string(ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]));
    i = j + 1;
  }
  return parts.empty() ? "-" : Join(parts, ", ");
}

Result<RunAnalysis> AnalyzeJob(std::vector<RunAnalysis> nodes, std::vector<NodeRow> described) {
  if (nodes.size() < 2) return Status::InvalidArgument("a job of several files needs two or more");
  if (!described.empty() && described.size() != nodes.size()) {
    return Status::InvalidArgument("AnalyzeJob: one described row per file, or none");
  }
  // Node rank order (files without one after, by host, then path).
  std::vector<size_t> order(nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return JobOrder(nodes[a]) < JobOrder(nodes[b]); });
  {
    std::vector<RunAnalysis> sorted;
    sorted.reserve(nodes.size());
    for (size_t i : order) sorted.push_back(std::move(nodes[i]));
    nodes = std::move(sorted);
  }
  std::vector<FileClock> clocks;
  for (const RunAnalysis& n : nodes) clocks.push_back(ClockOf(n));
  if (Status s = CheckOneJob(nodes, clocks); !s.ok()) return s;

  // Each file's row, from its own records, before any of them move.
  std::vector<NodeRow> rows;
  for (size_t i = 0; i < nodes.size(); ++i) {
    rows.push_back(described.empty() ? DescribeNode(nodes[i]) : std::move(described[order[i]]));
    const bool both = clocks[i].known && clocks[0].known;
    rows.back().clock_shift_seconds = both ? clocks[i].start - clocks[0].start : 0;
  }

  RunAnalysis job;
  std::vector<std::string> paths;
  for (const RunAnalysis& n : nodes) paths.push_back(n.path);
  job.path = Join(paths, ", ");
  // Node 0's host samples and facts, moved: below, node 0's records are read
  // from the job's timeline.
  job.timeline = std::move(nodes.front().timeline);
  Timeline& merged = job.timeline;
  auto timeline_of = [&](size_t i) -> Timeline& { return i == 0 ? merged : nodes[i].timeline; };
  const std::string base_host = merged.info.hostname;
  for (RankInfo& r : merged.ranks) {
    if (r.hostname.empty()) r.hostname = base_host;
  }

  std::set<Layer> checked;
  // One finding per id and summary, its hosts listed, for a rule that fired
  // alike on several nodes (the same NCCL setting everywhere).
  std::map<std::pair<std::string, std::string>, size_t> seen;
  // A node's notes, said once with every host that has it.
  std::map<std::string, std::vector<std::string>> note_hosts;
  std::vector<std::string> note_order;
  double latest_end = 0;
  for (const FileClock& c : clocks) latest_end = std::max(latest_end, c.end);
  for (size_t i = 0; i < nodes.size(); ++i) {
    RunAnalysis& n = nodes[i];
    const Timeline& t = timeline_of(i);
    const std::string& host = t.info.hostname;
    NodeRow& row = rows[i];
    if (i > 0) {
      for (EpochEvent e : t.epochs) {
        e.t += row.clock_shift_seconds;
        merged.epochs.push_back(e);
      }
      for (const LoaderConfig& l : t.loaders) merged.loaders.push_back(l);
      for (RankInfo r : t.ranks) {
        if (r.hostname.empty()) r.hostname = host;
        merged.ranks.push_back(std::move(r));
      }
    }
    // Ranks with steps but no hello (an older hook): named by the file's host.
    for (int r : row.ranks) {
      bool named = std::any_of(merged.ranks.begin(), merged.ranks.end(),
                               [&](const RankInfo& k) { return k.rank == r; });
      if (!named) merged.ranks.push_back(RankInfo{0, r, 0, 1, host});
    }
    for (Layer l : n.checked) checked.insert(l);
    for (Finding& f : n.findings) {
      if (f.layer == Layer::kDistributed) continue;  // judged below, over every rank
      auto key = std::make_pair(f.id, f.summary);
      if (auto it = seen.find(key); it != seen.end()) {
        Finding& kept = job.findings[it->second];
        std::get<std::string>(kept.evidence.front().value) += ", " + host;
        kept.summary = std::get<std::string>(kept.evidence.front().value) + ": " + f.summary;
        continue;
      }
      seen.emplace(key, job.findings.size());
      job.findings.push_back(OfHost(std::move(f), host));
    }
    for (const std::string& note : n.notes) {
      auto& hosts = note_hosts[note];
      if (hosts.empty()) note_order.push_back(note);
      if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
    }
    const double interval = t.info.interval_seconds;
    if (clocks[i].known &&
        latest_end - clocks[i].end > std::max(kNodeEndedEarlySeconds, 3 * interval)) {
      row.truncated = true;
      job.notes.push_back(fmt::format(
          "{} ({}) ends {:.0f} s before the job's last file: its recording stopped early (the "
          "node or its stallscope killed?); its ranks are reported up to then",
          n.path, host, latest_end - clocks[i].end));
    } else if (!t.info.duration_seconds && !t.samples.empty()) {
      row.truncated = true;
      job.notes.push_back(fmt::format(
          "{} ({}) was not closed: its stallscope ended before the job (killed?); its ranks "
          "are reported up to its last sample",
          n.path, host));
    }
    if (!t.node) {
      job.notes.push_back(fmt::format(
          "{} predates the node table: nothing in it says it is of this job, and it is aligned "
          "on its start time to the second; record again with this stallscope",
          n.path));
    } else if (t.node->clock_offset_seconds) {
      job.notes.push_back(fmt::format(
          "{}'s clock is {:+.3f} ms from node 0's (measured at start, round trip {:.3f} ms); "
          "its times are shifted by it",
          host, *t.node->clock_offset_seconds * 1e3,
          t.node->clock_round_trip_seconds.value_or(0) * 1e3));
    }
  }
  job.nodes = std::move(rows);
  std::vector<std::string> job_notes = std::move(job.notes);
  job.notes.clear();
  for (const std::string& note : note_order) {
    job.notes.push_back(Join(note_hosts[note], ", ") + ": " + note);
  }
  for (std::string& note : job_notes) job.notes.push_back(std::move(note));

  // What the job should hold and the files do not.
  std::set<int> have;
  for (const NodeRow& r : job.nodes) have.insert(r.ranks.begin(), r.ranks.end());
  std::optional<int> world, nnodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::optional<NodeInfo>& node = timeline_of(i).node;
    if (!node) continue;
    if (node->world_size) world = std::max(world.value_or(0), *node->world_size);
    if (node->nnodes) nnodes = std::max(nnodes.value_or(0), *node->nnodes);
  }
  if (world && !have.empty()) {
    std::set<int> missing;
    for (int r = 0; r < *world && missing.size() < 100000; ++r) {
      if (!have.count(r)) missing.insert(r);
    }
    if (!missing.empty()) {
      job.notes.push_back(fmt::format(
          "the job has {} ranks (WORLD_SIZE) and these files hold steps of {}: ranks {} are "
          "missing{}; the report is of the ranks it has",
          *world, have.size(), RankRangeText({missing.begin(), missing.end()}),
          nnodes && static_cast<size_t>(*nnodes) > nodes.size()
              ? fmt::format(" ({} of {} nodes' files given)", nodes.size(), *nnodes)
              : ""));
    }
  }

  CompareNodeIo(job.nodes, job.findings);
  FindingsWithNotes receive = CheckNodeReceive(job.nodes);
  for (Finding& f : receive.findings) job.findings.push_back(std::move(f));
  for (std::string& n : receive.notes) job.notes.push_back(std::move(n));
  if (std::any_of(job.nodes.begin(), job.nodes.end(),
                  [](const NodeRow& r) { return r.receive_bytes_per_s.has_value(); })) {
    checked.insert(Layer::kNetwork);
  }
  {
    // Every rank of every file judged together, each file's records read
    // where they are: a job's steps and sync records are held once. Each
    // file's steps first in time order (a stable sort, when they are not
    // already: a recorder writes them so), as the merged timeline has them,
    // so a rank's steps are judged in the order they ended.
    for (size_t i = 0; i < nodes.size(); ++i) InTimeOrder(timeline_of(i).steps);
    JobSteps steps;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Timeline& t = timeline_of(i);
      steps.parts.push_back({&t.steps, &t.step_syncs, &t.bucket_syncs,
                             t.bucket_syncs_recorded || t.step_syncs.empty(), &t.processes,
                             &t.ranks});
    }
    steps.ranks = &merged.ranks;
    steps.fallback_host = base_host;
    RankResults judged = JudgeRanks(steps);
    for (Finding& f : judged.findings) job.findings.push_back(std::move(f));
    job.ranks = std::move(judged.ranks);
  }
  job.checked.assign(checked.begin(), checked.end());
  job.checked.erase(std::remove(job.checked.begin(), job.checked.end(), Layer::kDistributed),
                    job.checked.end());
  if (job.ranks.size() >= 2) job.checked.push_back(Layer::kDistributed);
  // Where each rank's time went, on its own file's clock and run length
  // (node 0's from the whole timeline the job holds, before the sync
  // records go).
  for (size_t i = 0; i < nodes.size(); ++i) JoinTimes(job.time, BreakDownTime(timeline_of(i)));
  // The job's timeline: every file's steps in time order, on node 0's
  // clock. Its sync records were judged above, in place, and are not kept:
  // merged they would be held twice.
  for (size_t i = 0; i < nodes.size(); ++i) {
    Drop(timeline_of(i).step_syncs);
    Drop(timeline_of(i).bucket_syncs);
  }
  {
    size_t total = 0;
    for (size_t i = 0; i < nodes.size(); ++i) total += timeline_of(i).steps.size();
    merged.steps.reserve(total);
  }
  std::vector<size_t> step_runs = {merged.steps.size()};
  for (size_t i = 1; i < nodes.size(); ++i) {
    Timeline& t = nodes[i].timeline;
    for (StepEvent e : t.steps) {
      e.t += job.nodes[i].clock_shift_seconds;
      merged.steps.push_back(e);
    }
    step_runs.push_back(merged.steps.size());
    Drop(t.steps);
  }
  MergeByTime(merged.steps, std::move(step_runs));
  job.epochs = SummarizeEpochs(merged);
  job.baseline_json = nodes.front().baseline_json;
  return job;
}

}  // namespace stallscope
