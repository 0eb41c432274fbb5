#include "export/job_metrics.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/text.h"
#include "record/hook_receiver.h"
#include "sample/process.h"

namespace stallscope {

std::string CleanJobName(std::string_view name) {
  if (name.empty() || name.size() > 128) return {};
  for (char c : name) {
    if (c <= 0x20 || c >= 0x7f) return {};
  }
  return std::string(name);
}

JobProcess* JobTable::ProcessFor(int pid, int rank, int64_t uid, int64_t now_ns) {
  auto it = processes_.find(pid);
  // The pid of another user's process: the old one is gone, its pid reused.
  if (it != processes_.end() && uid >= 0 && it->second.uid >= 0 && it->second.uid != uid) {
    processes_.erase(it);
    it = processes_.end();
  }
  if (it == processes_.end()) {
    if (processes_.size() >= max_processes_) {
      ++refused_;
      return nullptr;
    }
    JobProcess p;
    p.pid = pid;
    p.rank = rank;
    p.job = fmt::format("pid-{}", pid);
    p.uid = uid;
    it = processes_.emplace(pid, std::move(p)).first;
  }
  it->second.last_seen_ns = now_ns;
  return &it->second;
}

void JobTable::Name(JobProcess& p, std::string name) {
  p.job = std::move(name);
  // A restarted rank of the same job: the old process's series end here.
  std::erase_if(processes_, [&](const auto& entry) {
    const JobProcess& q = entry.second;
    return q.pid != p.pid && q.job == p.job && q.rank == p.rank && q.uid == p.uid;
  });
}

void JobTable::Ingest(std::string_view datagram, int64_t now_ns, int sender_pid,
                      int64_t sender_uid) {
  for (std::string_view line : SplitLines(datagram)) {
    if (Trim(line).empty()) continue;
    std::vector<std::string_view> f = SplitFields(line);
    if (f.size() < 3) {
      ++malformed_;
      continue;
    }
    std::optional<int64_t> pid = ParseInt(f[1]);
    std::optional<int64_t> rank = ParseInt(f[2]);
    if (!pid || !rank || *pid <= 0 || *pid > (1 << 30) || *rank < 0 || *rank > (1 << 24)) {
      ++malformed_;
      continue;
    }
    if (sender_pid > 0) pid = sender_pid;
    if (f[0] == "slurm") {
      // `slurm pid rank JOB_ID`: the Slurm job the rank runs in.
      if (f.size() != 4 || f[3].size() > 20 || f[3].find_first_not_of("0123456789") != f[3].npos) {
        ++malformed_;
        continue;
      }
      if (JobProcess* p =
              ProcessFor(static_cast<int>(*pid), static_cast<int>(*rank), sender_uid, now_ns)) {
        p->slurm_job_id = std::string(f[3]);
      }
      continue;
    }
    if (f[0] == "job") {
      std::string name = f.size() == 4 ? CleanJobName(f[3]) : std::string();
      if (name.empty()) {
        ++malformed_;
        continue;
      }
      if (JobProcess* p =
              ProcessFor(static_cast<int>(*pid), static_cast<int>(*rank), sender_uid, now_ns)) {
        p->rank = static_cast<int>(*rank);
        Name(*p, std::move(name));
      }
      continue;
    }
    // The other records are read by the recorder's own parser, one line at a
    // time so each is tied to its process.
    HookEvents events;
    ParseHookDatagram(line, 0, events);
    if (events.malformed) {
      malformed_ += static_cast<uint64_t>(events.malformed);
      continue;
    }
    bool known = !events.steps.empty() || !events.epochs.empty() || !events.loaders.empty() ||
                 !events.pids.empty() || !events.syncs.empty() || events.dropped;
    if (!known) continue;  // a record type from a newer hook
    JobProcess* p = ProcessFor(static_cast<int>(*pid), static_cast<int>(*rank), sender_uid, now_ns);
    if (!p) continue;
    if (f[0] == "hello" && f.size() == 5) {
      p->rank = static_cast<int>(*rank);
      p->local_rank = static_cast<int>(ParseInt(f[3]).value_or(0));
      p->world_size = static_cast<int>(ParseInt(f[4]).value_or(1));
    }
    for (const StepEvent& s : events.steps) {
      ++p->steps;
      p->step_seconds_sum += s.step_seconds;
      p->wait_seconds_sum += s.wait_seconds;
      p->last_step_seconds = s.step_seconds;
      p->last_wait_seconds = s.wait_seconds;
      for (size_t b = 0; b < std::size(kStepBucketsSeconds); ++b) {
        if (s.step_seconds <= kStepBucketsSeconds[b]) {
          ++p->bucket_counts[b];
          break;
        }
      }
    }
    for (const StepSync& s : events.syncs) {
      p->sync_seconds_sum += s.sync_seconds;
      p->reports_sync = true;
    }
    for (const EpochEvent& e : events.epochs) p->epoch = e.epoch;
    for (const LoaderConfig& l : events.loaders) p->loader_workers = l.num_workers;
    if (events.dropped > 0) p->dropped_datagrams += static_cast<uint64_t>(events.dropped);
  }
}

void JobTable::UpdateTree(int pid, const ProcessTree& tree) {
  auto it = processes_.find(pid);
  if (it == processes_.end()) return;
  JobProcess& p = it->second;
  std::map<int32_t, MemberTotals> now;
  RoleFigures roles[2];
  for (const ProcessSample& m : tree.processes) {
    MemberTotals t;
    t.worker = m.pid != pid;
    t.cpu_seconds = m.utime_seconds + m.stime_seconds;
    t.run_delay_seconds = static_cast<double>(m.run_delay_ns.value_or(0)) / 1e9;
    RoleFigures& r = roles[t.worker ? 1 : 0];
    ++r.processes;
    r.rss_bytes += m.rss_bytes;
    r.cpu_seconds += t.cpu_seconds;
    r.run_delay_seconds += t.run_delay_seconds;
    now.emplace(m.pid, t);
  }
  // A member gone since the last read keeps its last figures in the
  // counters (a worker of the last epoch, a restarted one).
  for (const auto& [member, last] : p.members) {
    if (now.count(member)) continue;
    p.exited_cpu_seconds[last.worker ? 1 : 0] += last.cpu_seconds;
    p.exited_run_delay_seconds[last.worker ? 1 : 0] += last.run_delay_seconds;
  }
  p.members = std::move(now);
  for (int role = 0; role < 2; ++role) {
    roles[role].cpu_seconds += p.exited_cpu_seconds[role];
    roles[role].run_delay_seconds += p.exited_run_delay_seconds[role];
  }
  p.rank_role = roles[0];
  p.workers_role = roles[1];
  p.tree_read = !tree.processes.empty() || p.tree_read;
}

void JobTable::SeenInput(int pid, const std::string& device, const std::string& fs_type) {
  auto it = processes_.find(pid);
  if (it == processes_.end()) return;
  auto& seen = it->second.data_devices;
  auto key = std::make_pair(device, fs_type);
  if (!seen.count(key) && seen.size() >= kMaxDataDevices) return;
  ++seen[key];
}

void JobTable::Expire(int64_t now_ns) {
  expired_ += std::erase_if(processes_, [&](const auto& entry) {
    return now_ns - entry.second.last_seen_ns > expiry_ns_;
  });
}

void JobTable::Emit(Exposition& out, const std::string& host, int64_t now_ns) const {
  out.Family("stallscope_job_steps_total", MetricType::kCounter,
             "Training steps the rank reported through the stallscope hook.");
  out.Family("stallscope_job_step_seconds", MetricType::kHistogram,
             "Duration of one training step (from asking for a batch to asking for the next), "
             "waiting for data included.");
  out.Family("stallscope_job_data_wait_seconds_total", MetricType::kCounter,
             "Time the rank's steps spent waiting for the next batch from the data loader.");
  out.Family("stallscope_job_last_step_seconds", MetricType::kGauge,
             "Duration of the rank's last reported step.");
  out.Family("stallscope_job_last_data_wait_seconds", MetricType::kGauge,
             "Data wait of the rank's last reported step.");
  out.Family("stallscope_job_epoch", MetricType::kGauge,
             "Epoch the rank marked last with stallscope.epoch(n).");
  out.Family("stallscope_job_loader_workers", MetricType::kGauge,
             "num_workers of the rank's last reported DataLoader.");
  out.Family("stallscope_job_world_size", MetricType::kGauge, "WORLD_SIZE the rank reported.");
  out.Family("stallscope_job_report_age_seconds", MetricType::kGauge,
             "Seconds since the rank last reported (it expires when silent too long).");
  out.Family("stallscope_job_hook_dropped_datagrams_total", MetricType::kCounter,
             "Datagrams the rank's hook could not send (receiver busy or gone).");
  out.Family("stallscope_job_sync_wait_seconds_total", MetricType::kCounter,
             "Time the rank's steps waited in gradient synchronization (stallscope.ddp(model): "
             "each bucket's all-reduce from launch to completion, overlaps counted once).");
  out.Family("stallscope_job_processes", MetricType::kGauge,
             "Processes of the rank's tree: role=\"rank\" is the rank itself, role=\"workers\" "
             "everything below it (DataLoader workers).");
  out.Family("stallscope_job_rss_bytes", MetricType::kGauge,
             "Resident memory (VmRSS) of the rank's tree, by role.");
  out.Family("stallscope_job_cpu_seconds_total", MetricType::kCounter,
             "CPU time (user + system) of the rank's tree, by role; exited members included.");
  out.Family("stallscope_job_run_delay_seconds_total", MetricType::kCounter,
             "Time the rank's tree was runnable but waiting for a CPU (/proc/PID/schedstat), "
             "by role; exited members included.");
  out.Family("stallscope_job_data_device_info", MetricType::kGauge,
             "The disk (device, as the disk series name it) and file system behind most of the "
             "input files the rank's workers (else the rank) were caught reading; 1.");
  std::vector<double> bounds(std::begin(kStepBucketsSeconds), std::end(kStepBucketsSeconds));
  for (const auto& [pid, p] : processes_) {
    std::vector<MetricLabel> labels = {
        {"job_name", p.job}, {"rank", std::to_string(p.rank)}, {"host", host}};
    if (p.uid >= 0) labels.push_back({"uid", std::to_string(p.uid)});
    if (!p.slurm_job_id.empty()) labels.push_back({"job_id", p.slurm_job_id});
    out.Add("stallscope_job_steps_total", labels, static_cast<double>(p.steps));
    std::vector<uint64_t> cumulative;
    uint64_t running = 0;
    for (uint64_t c : p.bucket_counts) cumulative.push_back(running += c);
    out.AddHistogram("stallscope_job_step_seconds", labels, bounds, cumulative, p.step_seconds_sum,
                     p.steps);
    out.Add("stallscope_job_data_wait_seconds_total", labels, p.wait_seconds_sum);
    if (p.steps) {
      out.Add("stallscope_job_last_step_seconds", labels, p.last_step_seconds);
      out.Add("stallscope_job_last_data_wait_seconds", labels, p.last_wait_seconds);
    }
    if (p.epoch >= 0) out.Add("stallscope_job_epoch", labels, p.epoch);
    if (p.loader_workers >= 0) out.Add("stallscope_job_loader_workers", labels, p.loader_workers);
    out.Add("stallscope_job_world_size", labels, p.world_size);
    out.Add("stallscope_job_report_age_seconds", labels, (now_ns - p.last_seen_ns) / 1e9);
    out.Add("stallscope_job_hook_dropped_datagrams_total", labels,
            static_cast<double>(p.dropped_datagrams));
    if (p.reports_sync)
      out.Add("stallscope_job_sync_wait_seconds_total", labels, p.sync_seconds_sum);
    if (p.tree_read) {
      for (int role = 0; role < 2; ++role) {
        const RoleFigures& r = role == 0 ? p.rank_role : p.workers_role;
        std::vector<MetricLabel> by_role = labels;
        by_role.push_back({"role", role == 0 ? "rank" : "workers"});
        out.Add("stallscope_job_processes", by_role, r.processes);
        out.Add("stallscope_job_rss_bytes", by_role, static_cast<double>(r.rss_bytes));
        out.Add("stallscope_job_cpu_seconds_total", by_role, r.cpu_seconds);
        out.Add("stallscope_job_run_delay_seconds_total", by_role, r.run_delay_seconds);
      }
    }
    if (!p.data_devices.empty()) {
      auto most =
          std::max_element(p.data_devices.begin(), p.data_devices.end(),
                           [](const auto& a, const auto& b) { return a.second < b.second; });
      std::vector<MetricLabel> device = labels;
      if (!most->first.first.empty()) device.push_back({"device", most->first.first});
      if (!most->first.second.empty()) device.push_back({"fs_type", most->first.second});
      out.Add("stallscope_job_data_device_info", device, 1);
    }
  }
}

}  // namespace stallscope
