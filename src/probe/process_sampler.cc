#include "probe/process_sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/resource.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>

#include "core/file.h"
#include "core/text.h"
#include "probe/cpu_stat.h"
#include "probe/process_tree.h"

namespace stallscope {
namespace {

// The getdents buffer when listing new pids: room for about 80 entries.
constexpr size_t kRangeListingBytes = 2048;

// ReadProcessTree's cap on cmdline: argv past it is dropped.
constexpr size_t kMaxCmdlineBytes = 256 << 10;

// A pid from a /proc entry name; nullopt for "self", "meminfo", ...
std::optional<int32_t> PidOfName(const char* name) {
  if (name[0] < '0' || name[0] > '9') return std::nullopt;
  int32_t pid = 0;
  const char* end = name + std::strlen(name);
  auto [ptr, ec] = std::from_chars(name, end, pid);
  if (ec != std::errc() || ptr != end || pid <= 0) return std::nullopt;
  return pid;
}

int DescriptorBudget(int wanted) {
  struct rlimit limit;
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return std::min(wanted, 512);
  if (limit.rlim_cur == RLIM_INFINITY) return std::max(wanted, 0);
  return static_cast<int>(
      std::clamp<rlim_t>(static_cast<rlim_t>(std::max(wanted, 0)), 0, limit.rlim_cur / 2));
}

}  // namespace

std::vector<std::pair<int32_t, int32_t>> NewPidRanges(int32_t before, int32_t now) {
  if (now == before) return {};
  if (now > before) return {{before + 1, now}};
  return {{before + 1, std::numeric_limits<int32_t>::max()}, {1, now}};
}

ProcessTreeSampler::ProcessTreeSampler(const Root& root, int32_t root_pid,
                                       ProcessSamplerOptions options)
    : proc_path_(root.Path("/proc")), root_pid_(root_pid), options_(options) {
  int64_t ticks =
      options_.clock_ticks_per_second > 0 ? options_.clock_ticks_per_second : ClockTicksPerSecond();
  ticks_per_second_ = static_cast<double>(ticks > 0 ? ticks : 100);
  if (options_.page_size_bytes > 0) {
    page_size_bytes_ = options_.page_size_bytes;
  } else if (long page = ::sysconf(_SC_PAGESIZE); page > 0) {
    page_size_bytes_ = static_cast<uint64_t>(page);
  }
  options_.slow_every = std::max(options_.slow_every, 1);
  options_.quiet_slow_every = std::max(options_.quiet_slow_every, 1);
  budget_ = DescriptorBudget(options_.max_open_files);
}

const char* ProcessTreeSampler::PathOf(int32_t pid, const char* name) {
  auto [end, ec] = std::to_chars(path_, path_ + 16, pid);
  *end++ = '/';
  size_t length = std::min(std::strlen(name), sizeof path_ - static_cast<size_t>(end - path_) - 1);
  std::memcpy(end, name, length);
  end[length] = '\0';
  return path_;
}

int ProcessTreeSampler::ReadOnce(int32_t pid, const char* name, size_t max_bytes) {
  return ReadProcFileOnce(proc_dir_.fd(), PathOf(pid, name), buffer_, ReadUntil::kShortRead,
                          max_bytes);
}

int ProcessTreeSampler::ReadKept(ProcFile& file, int32_t pid, const char* name, int keep) {
  if (file.is_open()) return file.Read(buffer_, ReadUntil::kShortRead);
  if (open_files_ >= keep) return ReadOnce(pid, name);
  if (int err = file.Open(proc_dir_.fd(), PathOf(pid, name)); err != 0) return err;
  ++open_files_;
  return file.Read(buffer_, ReadUntil::kShortRead);
}

ProcessTreeSampler::Members::iterator ProcessTreeSampler::Forget(Members::iterator member) {
  Member& m = member->second;
  open_files_ -= m.stat.is_open() + m.io.is_open() + m.schedstat.is_open() + m.status.is_open() +
                 m.smaps_rollup.is_open();
  ++membership_changes_;
  return members_.erase(member);  // the ProcFiles close themselves
}

ProcessTreeSampler::Identity ProcessTreeSampler::Identify(int32_t pid, uint64_t inode,
                                                          Known* known) {
  known->pid = pid;
  known->inode = inode;
  known->readable = false;
  // Opened to be kept: if the pid turns out to be a member, this descriptor
  // and this read are its first sample's.
  ProcFile file;
  int err = open_files_ < budget_ ? file.Open(proc_dir_.fd(), PathOf(pid, "stat")) : 0;
  if (err == 0)
    err = file.is_open() ? file.Read(buffer_, ReadUntil::kShortRead) : ReadOnce(pid, "stat");
  // A zombie reaped between open and read leaves an empty file.
  if (IsVanishedErrno(err) || (err == 0 && buffer_.empty())) return Identity::kVanished;
  if (err != 0) return Identity::kUnreadable;
  Result<ProcStat> stat = ParseProcStat(buffer_.view(), "stat");
  if (!stat.ok()) return Identity::kUnreadable;
  known->ppid = stat->ppid;
  known->start_time_ticks = stat->start_time_ticks;
  known->readable = true;
  open_files_ += file.is_open();
  pending_.insert_or_assign(pid, Pending{std::move(file), std::move(stat).value()});
  return Identity::kNew;
}

bool ProcessTreeSampler::Gone(const Known& known, ProcessTree& tree) {
  auto member = members_.find(known.pid);
  if (member == members_.end() || member->second.start_time_ticks != known.start_time_ticks) {
    return false;
  }
  Forget(member);
  ++tree.vanished;
  return true;
}

Status ProcessTreeSampler::OpenProc() {
  if (int err = proc_dir_.Open(AT_FDCWD, proc_path_.c_str()); err != 0) {
    return Status::FromErrno(proc_path_, err);
  }
  // Listing only the new pids needs the kernel's procfs for this process's
  // pid namespace (not a fixture, not a /proc of another namespace, not an
  // LXCFS loadavg) and a readable last pid.
  struct statfs fs;
  char self[32] = {};
  range_listing_ = ::fstatfs(proc_dir_.fd(), &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC &&
                   ::readlinkat(proc_dir_.fd(), "self", self, sizeof self - 1) > 0 &&
                   std::string_view(self) == std::to_string(::getpid()) &&
                   loadavg_.Open(proc_dir_.fd(), "loadavg") == 0 &&
                   ::fstatfs(loadavg_.fd(), &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC;
  if (!range_listing_) loadavg_.Close();
  return Status::Ok();
}

std::optional<int32_t> ProcessTreeSampler::ReadLastPid() {
  if (!loadavg_.is_open() || loadavg_.Read(buffer_, ReadUntil::kShortRead) != 0) {
    return std::nullopt;
  }
  // "0.52 0.58 0.59 2/154 23456": the last field.
  std::string_view text = Trim(buffer_.view());
  size_t space = text.rfind(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::optional<int64_t> pid = ParseInt(text.substr(space + 1));
  if (!pid || *pid < 0 || *pid > std::numeric_limits<int32_t>::max()) return std::nullopt;
  return static_cast<int32_t>(*pid);
}

int ProcessTreeSampler::List(int64_t position, int32_t last, size_t bytes) {
  listing_.clear();
  if (::lseek(proc_dir_.fd(), position, SEEK_SET) < 0) return errno;
  bytes = std::min(bytes, sizeof dirents_);
  for (;;) {
    ssize_t n = ::getdents64(proc_dir_.fd(), dirents_, bytes);
    if (n < 0) return errno;
    if (n == 0) return 0;
    for (ssize_t at = 0; at < n;) {
      const auto* entry = reinterpret_cast<const struct dirent64*>(dirents_ + at);
      at += entry->d_reclen;
      std::optional<int32_t> pid = PidOfName(entry->d_name);
      if (!pid) continue;
      if (*pid > last) return 0;
      listing_.push_back({*pid, entry->d_ino, entry->d_off});
    }
  }
}

void ProcessTreeSampler::LearnPidOffset() {
  // Each entry's d_off is the position of the next one, which procfs makes
  // pid + TGID_OFFSET: learn the offset, and trust it only if every pair of
  // neighbours agrees.
  std::optional<int64_t> offset;
  for (size_t i = 0; i + 1 < listing_.size(); ++i) {
    int64_t gap = listing_[i].next_position - listing_[i + 1].pid;
    if (offset && *offset != gap) {
      offset.reset();
      break;
    }
    offset = gap;
  }
  if (offset && *offset > 0) {
    pid_offset_ = *offset;
  } else {
    range_listing_ = false;
  }
}

ProcessTreeSampler::Identity ProcessTreeSampler::Consider(int32_t pid, uint64_t inode,
                                                          const Known* old, ProcessTree& tree,
                                                          Known* fresh) {
  // New, or listed under a new inode: the same process (its dentry was
  // evicted and rebuilt) or another one that reused the pid.
  Identity identity = Identify(pid, inode, fresh);
  bool same = old != nullptr && old->readable && identity == Identity::kNew &&
              old->start_time_ticks == fresh->start_time_ticks;
  bool dropped = old != nullptr && !same && Gone(*old, tree);
  if (identity == Identity::kVanished && !dropped) ++tree.vanished;  // dropped: counted
  if (identity == Identity::kUnreadable) ++tree.unreadable;
  if (identity == Identity::kNew && !same) new_.push_back(*fresh);
  return identity;
}

Status ProcessTreeSampler::ListAll(ProcessTree& tree) {
  std::optional<int32_t> last_pid = range_listing_ ? ReadLastPid() : std::nullopt;
  if (int err = List(0, std::numeric_limits<int32_t>::max(), sizeof dirents_); err != 0) {
    return Status::FromErrno(proc_path_, err);
  }
  if (range_listing_) {
    LearnPidOffset();
    if (last_pid) {
      last_pid_ = *last_pid;
    } else {
      range_listing_ = false;
    }
  }
  ++full_listings_;
  // procfs lists pids in order; a fixture directory does not.
  auto by_pid = [](const Listed& a, const Listed& b) { return a.pid < b.pid; };
  if (!std::is_sorted(listing_.begin(), listing_.end(), by_pid)) {
    std::sort(listing_.begin(), listing_.end(), by_pid);
  }

  // Merge the listing with what earlier samples knew, both in pid order.
  next_known_.clear();
  size_t i = 0;
  for (const Listed& entry : listing_) {
    while (i < known_.size() && known_[i].pid < entry.pid) Gone(known_[i++], tree);
    const Known* old = i < known_.size() && known_[i].pid == entry.pid ? &known_[i++] : nullptr;
    if (old != nullptr && old->inode == entry.inode && !old->recheck) {
      next_known_.push_back(*old);
      continue;
    }
    Known fresh;
    if (Consider(entry.pid, entry.inode, old, tree, &fresh) != Identity::kVanished) {
      next_known_.push_back(fresh);
    }
  }
  while (i < known_.size()) Gone(known_[i++], tree);
  known_.swap(next_known_);
  return Status::Ok();
}

Status ProcessTreeSampler::ListNew(ProcessTree& tree) {
  std::optional<int32_t> last_pid = ReadLastPid();
  if (!last_pid) {
    range_listing_ = false;
    return ListAll(tree);
  }
  if (*last_pid == last_pid_) return Status::Ok();  // no process created since
  int32_t before = last_pid_;
  last_pid_ = *last_pid;
  for (const auto& [first, last] : NewPidRanges(before, *last_pid)) {
    // A small read: past the new pids may lie old ones (pids wrapped before).
    if (int err = List(pid_offset_ + first, last, kRangeListingBytes); err != 0) {
      return Status::FromErrno(proc_path_, err);
    }
    for (const Listed& entry : listing_) {
      auto old = std::lower_bound(known_.begin(), known_.end(), entry.pid,
                                  [](const Known& k, int32_t p) { return k.pid < p; });
      bool has_old = old != known_.end() && old->pid == entry.pid;
      Known fresh;
      if (Consider(entry.pid, entry.inode, has_old ? &*old : nullptr, tree, &fresh) ==
          Identity::kVanished) {
        if (has_old) known_.erase(old);
      } else if (has_old) {
        *old = fresh;
      } else {
        known_.insert(old, fresh);
      }
    }
  }
  return Status::Ok();
}

Status ProcessTreeSampler::Discover(ProcessTree& tree, bool full) {
  new_.clear();
  DropPending();  // left by a sample that failed half-way
  if (!proc_dir_.is_open()) {
    if (Status opened = OpenProc(); !opened.ok()) return opened;
    full = true;
  }
  return full || !range_listing_ ? ListAll(tree) : ListNew(tree);
}

void ProcessTreeSampler::DropPending() {
  for (auto& [pid, pending] : pending_) open_files_ -= pending.stat.is_open();
  pending_.clear();  // the ProcFiles close themselves
}

void ProcessTreeSampler::AdmitNewMembers() {
  RetryUndecided();  // those of earlier samples, before this sample's join them
  AdmitFromNew();
  DropPending();  // the stat files of the pids that did not become members
}

void ProcessTreeSampler::RetryUndecided() {
  for (auto it = undecided_.begin(); it != undecided_.end();) {
    const int32_t pid = it->first;
    auto known = std::lower_bound(known_.begin(), known_.end(), pid,
                                  [](const Known& k, int32_t p) { return k.pid < p; });
    // Gone, another process under the pid now, or a member already.
    if (known == known_.end() || known->pid != pid ||
        known->start_time_ticks != it->second.start_time_ticks || members_.count(pid) != 0) {
      it = undecided_.erase(it);
      continue;
    }
    std::optional<bool> adopted = options_.adopt(pid);
    if (adopted.value_or(false)) {
      ++membership_changes_;
      Member& m = members_[pid];
      m.start_time_ticks = known->start_time_ticks;
      m.sample.ppid = known->ppid;
    }
    if (adopted || --it->second.tries_left <= 0) {
      it = undecided_.erase(it);
    } else {
      ++it;
    }
  }
}

void ProcessTreeSampler::AdmitFromNew() {
  if (new_.empty()) return;
  // In pid order for known_of below (two ranges of new pids, when pids
  // wrapped around, come high ones first).
  std::sort(new_.begin(), new_.end(), [](const Known& a, const Known& b) { return a.pid < b.pid; });
  // New pids by parent: a new member's new children are found from it.
  by_parent_.clear();
  for (const Known& k : new_) by_parent_.emplace_back(k.ppid, k.pid);
  std::sort(by_parent_.begin(), by_parent_.end());
  stack_.clear();
  auto admit = [&](const Known& k) {
    if (members_.count(k.pid) != 0) return;
    ++membership_changes_;
    Member& m = members_[k.pid];
    m.start_time_ticks = k.start_time_ticks;
    m.sample.ppid = k.ppid;
    if (auto pending = pending_.find(k.pid); pending != pending_.end()) {
      m.stat = std::move(pending->second.stat);
      m.first_stat = std::move(pending->second.parsed);
      pending_.erase(pending);
    }
    stack_.push_back(k.pid);
  };
  for (const Known& k : new_) {
    if (k.pid == root_pid_ && !root_seen_) {
      root_seen_ = true;
      root_start_time_ticks_ = k.start_time_ticks;
      admit(k);
    } else if (members_.count(k.ppid) != 0 && k.pid != root_pid_) {
      admit(k);
    } else if (options_.adopt && k.pid != root_pid_) {
      std::optional<bool> adopted = options_.adopt(k.pid);
      if (adopted.value_or(false)) {
        admit(k);
      } else if (!adopted && undecided_.size() < kMaxUndecided) {
        undecided_[k.pid] = Undecided{k.start_time_ticks, kAdoptRetries};
      }
    }
  }
  auto known_of = [&](int32_t pid) {
    return *std::lower_bound(new_.begin(), new_.end(), pid,
                             [](const Known& k, int32_t p) { return k.pid < p; });
  };
  while (!stack_.empty()) {
    int32_t parent = stack_.back();
    stack_.pop_back();
    auto first = std::lower_bound(by_parent_.begin(), by_parent_.end(), std::pair(parent, 0));
    for (auto it = first; it != by_parent_.end() && it->first == parent; ++it) {
      if (it->second != root_pid_) admit(known_of(it->second));
    }
  }
}

bool ProcessTreeSampler::ParentStays(const Member& m) const {
  auto parent = members_.find(m.sample.ppid);
  return parent != members_.end() && parent->second.sample.state != 'Z';
}

int ProcessTreeSampler::ReadMember(int32_t pid, Member& m, bool slow, bool may_skip,
                                   bool every_io) {
  const bool first = m.read_in < 0;
  slow = slow || first;
  std::optional<ProcStat> stat = std::move(m.first_stat);
  m.first_stat.reset();
  // A single-threaded member whose schedstat (time on a CPU, time waiting
  // for one) did not move since the last sample did not run: nothing its
  // stat holds can have changed but its RSS (reclaimed or swapped out) and
  // its parent (reparented), which the slow samples read again. Its stat,
  // the costly file (the kernel prints 52 fields), is not read then. Only
  // through a kept descriptor: it fails once the process is gone, so the
  // pid cannot name another one.
  std::optional<Schedstat> sched_read;
  // A member whose parent left the tree is read whole: it was reparented.
  if (!stat && !slow && may_skip && options_.read_schedstat && m.sample.threads == 1 &&
      !m.rss_from_status && m.schedstat.is_open() && m.sample.sched_cpu_ns.value_or(0) > 0 &&
      m.sample.run_delay_ns && (pid == root_pid_ || ParentStays(m))) {
    int err = m.schedstat.Read(buffer_, ReadUntil::kShortRead);
    if (err != 0) return err;
    if (buffer_.empty()) return ESRCH;
    if (Result<Schedstat> sched = ParseSchedstat(buffer_.view(), "schedstat"); sched.ok()) {
      if (sched->cpu_ns == *m.sample.sched_cpu_ns &&
          sched->run_delay_ns == *m.sample.run_delay_ns) {
        ++idle_skips_;
        idle_.push_back(pid);
        return 0;  // nor its io: it issued no read
      }
      sched_read = *sched;
    }
  }
  if (!stat) {
    int err = ReadKept(m.stat, pid, "stat", budget_);
    if (err != 0) return err;
    if (buffer_.empty()) return ESRCH;
    Result<ProcStat> parsed = ParseProcStat(buffer_.view(), "stat");
    if (!parsed.ok()) return EINVAL;
    stat = std::move(parsed).value();
  }
  // Read by path (no descriptor left), the pid may now be another process.
  if (stat->start_time_ticks != m.start_time_ticks) return ESRCH;

  ProcessSample& s = m.sample;
  const uint64_t ticks_before = s.utime_ticks + s.stime_ticks;
  s.pid = pid;
  s.ppid = stat->ppid;
  s.comm = std::move(stat->comm);
  s.state = stat->state;
  s.utime_ticks = stat->utime_ticks;
  s.stime_ticks = stat->stime_ticks;
  s.utime_seconds = static_cast<double>(stat->utime_ticks) / ticks_per_second_;
  s.stime_seconds = static_cast<double>(stat->stime_ticks) / ticks_per_second_;
  s.start_time_ticks = stat->start_time_ticks;
  s.start_time_seconds = static_cast<double>(stat->start_time_ticks) / ticks_per_second_;
  s.threads = stat->threads;
  if (stat->rss_pages) {
    s.rss_bytes = *stat->rss_pages * page_size_bytes_;
  } else {
    m.rss_from_status = true;
  }

  // Slow files: kept open only while under half the budget is in use; on a
  // slow sample, skipped for a member quiet since they were last read.
  const uint64_t cpu_ticks = stat->utime_ticks + stat->stime_ticks;
  const uint64_t faults = stat->minor_faults + stat->major_faults;
  const uint64_t rss_pages = stat->rss_pages.value_or(0);
  bool read_slow = slow;
  if (slow && !first && !m.rss_from_status && cpu_ticks == m.slow_cpu_ticks &&
      faults == m.slow_faults && rss_pages == m.slow_rss_pages &&
      m.slow_membership == membership_changes_ &&
      samples_ - m.slow_read_in < int64_t{options_.slow_every} * options_.quiet_slow_every) {
    read_slow = false;
    ++quiet_skips_;
  }
  // What the gate compares against is noted only once the slow files were
  // read whole, so a failed read is tried again on the next slow sample.
  bool slow_read_whole = read_slow;
  const int keep_slow = budget_ / 2;
  if (read_slow || m.rss_from_status) {
    int err = ReadKept(m.status, pid, "status", keep_slow);
    if (err != 0) return err;
    if (buffer_.empty()) return ESRCH;
    Result<ProcStatus> status = ParseProcStatus(buffer_.view(), "status");
    if (!status.ok()) return EINVAL;
    if (m.rss_from_status) s.rss_bytes = status->rss_bytes;
    s.vm_peak_bytes = status->vm_peak_bytes;
    s.vm_hwm_bytes = status->vm_hwm_bytes;
    s.vm_lck_bytes = status->vm_lck_bytes;
    s.vm_pin_bytes = status->vm_pin_bytes;
    s.vm_swap_bytes = status->vm_swap_bytes;
  }

  // The optional files: unreadable (other users' io; smaps_rollup of a
  // kernel thread gives ESRCH) or malformed leaves the field absent.
  // io is read again only for a member that had a CPU tick since, is in
  // D state (its reads were submitted, it waits on them), or on a slow
  // sample: a process that did not run issued no read, and one that ran
  // under a tick has its bytes counted at its next reading (the counters
  // are cumulative; none is lost).
  // (schedstat read above and moved: it ran, if under a tick.)
  const bool ticked = first || sched_read || stat->utime_ticks + stat->stime_ticks != ticks_before;
  if (options_.read_io && (!m.io_denied || slow) &&
      (ticked || slow || every_io || s.state == 'D' || !s.io)) {
    int err = ReadKept(m.io, pid, "io", budget_);
    Result<ProcessIo> io = err == 0 && !buffer_.empty() ? ParseProcessIo(buffer_.view(), "io")
                                                        : Result<ProcessIo>(Status::NotFound("io"));
    if (io.ok()) {
      s.io = *io;
    } else {
      s.io.reset();
    }
    m.io_denied = err != 0 && !IsVanishedErrno(err);
  }
  // A member with no CPU tick since its last sample keeps its schedstat:
  // its time on a CPU did not move, and a process that waited a whole
  // interval for a CPU it never got is one the scheduler starves, which
  // shows in the members that did run.
  if (sched_read) {
    s.sched_cpu_ns = sched_read->cpu_ns;
    s.run_delay_ns = sched_read->run_delay_ns;
  } else if (options_.read_schedstat && (!m.schedstat_denied || slow) &&
             (ticked || !s.run_delay_ns)) {
    int err = ReadKept(m.schedstat, pid, "schedstat", budget_);
    Result<Schedstat> sched = err == 0 && !buffer_.empty()
                                  ? ParseSchedstat(buffer_.view(), "schedstat")
                                  : Result<Schedstat>(Status::NotFound("schedstat"));
    if (sched.ok()) {
      s.sched_cpu_ns = sched->cpu_ns;
      s.run_delay_ns = sched->run_delay_ns;
    } else {
      s.sched_cpu_ns.reset();
      s.run_delay_ns.reset();
    }
    m.schedstat_denied = err != 0 && !IsVanishedErrno(err);
  }
  if (options_.read_pss && read_slow) {
    // An open smaps_rollup holds the address space it was opened on: after
    // an exec that one is gone and the read fails, so open the new one.
    int err = ReadKept(m.smaps_rollup, pid, "smaps_rollup", keep_slow);
    if (err != 0 && m.smaps_rollup.is_open()) {
      m.smaps_rollup.Close();
      --open_files_;
      err = ReadKept(m.smaps_rollup, pid, "smaps_rollup", keep_slow);
    }
    Result<SmapsRollup> rollup = err == 0 && !buffer_.empty()
                                     ? ParseSmapsRollup(buffer_.view(), "smaps_rollup")
                                     : Result<SmapsRollup>(Status::NotFound("smaps_rollup"));
    if (rollup.ok()) {
      s.pss_bytes = rollup->pss_bytes;
    } else {
      s.pss_bytes.reset();
      // Read but not parsed (a torn read): try again. A file refused for
      // good (a kernel thread's ESRCH, another user's EACCES) keeps the gate.
      if (err == 0) slow_read_whole = false;
    }
  }
  if (slow_read_whole) {
    m.slow_cpu_ticks = cpu_ticks;
    m.slow_faults = faults;
    m.slow_rss_pages = rss_pages;
    m.slow_membership = membership_changes_;
    m.slow_read_in = samples_;
  }
  // cmdline changes with an exec, which also changes comm (a fork()ed child
  // caught before its exec shows its parent's argv until then).
  if (options_.read_cmdline && (first || s.comm != m.cmdline_comm)) {
    if (ReadOnce(pid, "cmdline", kMaxCmdlineBytes) == 0) {
      s.cmdline = ParseCmdline(buffer_.view());
    } else {
      s.cmdline.clear();
    }
    m.cmdline_comm = s.comm;
  }
  return 0;
}

void ProcessTreeSampler::Visit(int32_t start, ProcessTree& tree) {
  // Depth-first, siblings in pid order; each member once, so a parent cycle
  // (only a corrupt fixture can have one) ends.
  stack_.clear();
  stack_.push_back(start);
  while (!stack_.empty()) {
    int32_t pid = stack_.back();
    stack_.pop_back();
    auto member = members_.find(pid);
    if (member == members_.end() || member->second.visited) continue;
    Member& m = member->second;
    m.visited = true;
    if (m.read_in == samples_) tree.processes.push_back(m.sample);
    auto first = std::lower_bound(by_parent_.begin(), by_parent_.end(), std::pair(pid, 0));
    auto last = first;
    while (last != by_parent_.end() && last->first == pid) ++last;
    for (auto it = last; it != first;) stack_.push_back((--it)->second);
  }
}

void ProcessTreeSampler::Order(ProcessTree& tree) {
  by_parent_.clear();
  for (auto& [pid, m] : members_) {
    by_parent_.emplace_back(m.sample.ppid, pid);
    m.visited = false;
  }
  std::sort(by_parent_.begin(), by_parent_.end());
  tree.processes.reserve(members_.size());
  Visit(root_pid_, tree);
  // Members reparented out of the tree, as roots of their own subtrees; then
  // anything a cycle kept from being reached.
  for (const auto& [pid, m] : members_) {
    if (!m.visited && members_.count(m.sample.ppid) == 0) Visit(pid, tree);
  }
  for (const auto& [pid, m] : members_) {
    if (!m.visited) Visit(pid, tree);
  }
}

Result<ProcessTree> ProcessTreeSampler::Sample(bool every_io) {
  auto not_found = [&] { return Status::NotFound("pid " + std::to_string(root_pid_)); };
  const bool rootless = root_pid_ <= 0;
  if (rootless && !options_.adopt) return not_found();
  const bool slow = !every_io && cadence_samples_++ % options_.slow_every == 0;
  ++samples_;
  ProcessTree tree;
  tree.root_pid = root_pid_;
  // All of /proc on the first and the slow samples (which also finds what
  // only a full listing can: a pid set by clone3's set_tid); otherwise only
  // the pids handed out since the last sample.
  if (Status listed = Discover(tree, slow); !listed.ok()) return listed;
  AdmitNewMembers();
  auto root = members_.find(root_pid_);
  if (!rootless &&
      (root == members_.end() || root->second.start_time_ticks != root_start_time_ticks_)) {
    return not_found();
  }

  // Reads a member; the iterator past it (past its place, if it is gone).
  auto read = [&](Members::iterator it, bool may_skip) {
    int err = ReadMember(it->first, it->second, slow, may_skip, every_io);
    if (err == 0) {
      it->second.read_in = samples_;
      return std::next(it);
    }
    if (!IsVanishedErrno(err)) {
      ++tree.unreadable;
      return std::next(it);
    }
    ++tree.vanished;
    // Still listed, the pid may name a new process by the next sample.
    auto known = std::lower_bound(known_.begin(), known_.end(), it->first,
                                  [](const Known& k, int32_t p) { return k.pid < p; });
    if (known != known_.end() && known->pid == it->first) known->recheck = true;
    return Forget(it);
  };
  idle_.clear();
  for (auto it = members_.begin(); it != members_.end();) it = read(it, /*may_skip=*/true);
  // An idle member read before its parent was found gone: reparented.
  for (int32_t pid : idle_) {
    auto it = members_.find(pid);
    if (it != members_.end() && pid != root_pid_ && !ParentStays(it->second)) {
      --idle_skips_;
      read(it, /*may_skip=*/false);
    }
  }
  root = members_.find(root_pid_);
  if (!rootless && (root == members_.end() || root->second.read_in != samples_)) {
    return not_found();
  }
  Order(tree);
  return tree;
}

}  // namespace stallscope
