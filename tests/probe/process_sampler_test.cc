// ProcessTreeSampler on the fixture tree (against ReadProcessTree, and with
// files changed between samples) and on live trees this test forks.
#include "probe/process_sampler.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <type_traits>

#include "core/child_call.h"
#include "core/file.h"
#include "probe/process_tree.h"
#include "proc_tree_copy.h"

namespace stallscope {
namespace {

namespace fs = std::filesystem;
const std::string kFixtures = STALLSCOPE_FIXTURES;

std::vector<int32_t> Pids(const ProcessTree& tree) {
  std::vector<int32_t> pids;
  for (const ProcessSample& p : tree.processes) pids.push_back(p.pid);
  return pids;
}

const ProcessSample* Find(const ProcessTree& tree, int32_t pid) {
  for (const ProcessSample& p : tree.processes) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

void ExpectSameProcess(const ProcessSample& a, const ProcessSample& b) {
  SCOPED_TRACE("pid " + std::to_string(a.pid));
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.ppid, b.ppid);
  EXPECT_EQ(a.comm, b.comm);
  EXPECT_EQ(a.cmdline, b.cmdline);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.utime_ticks, b.utime_ticks);
  EXPECT_EQ(a.stime_ticks, b.stime_ticks);
  EXPECT_DOUBLE_EQ(a.utime_seconds, b.utime_seconds);
  EXPECT_DOUBLE_EQ(a.stime_seconds, b.stime_seconds);
  EXPECT_EQ(a.start_time_ticks, b.start_time_ticks);
  EXPECT_DOUBLE_EQ(a.start_time_seconds, b.start_time_seconds);
  EXPECT_EQ(a.threads, b.threads);
  EXPECT_EQ(a.rss_bytes, b.rss_bytes);
  EXPECT_EQ(a.pss_bytes, b.pss_bytes);
  EXPECT_EQ(a.vm_peak_bytes, b.vm_peak_bytes);
  EXPECT_EQ(a.vm_hwm_bytes, b.vm_hwm_bytes);
  EXPECT_EQ(a.vm_lck_bytes, b.vm_lck_bytes);
  EXPECT_EQ(a.vm_pin_bytes, b.vm_pin_bytes);
  EXPECT_EQ(a.vm_swap_bytes, b.vm_swap_bytes);
  ASSERT_EQ(a.io.has_value(), b.io.has_value());
  if (a.io) {
    EXPECT_EQ(a.io->rchar_bytes, b.io->rchar_bytes);
    EXPECT_EQ(a.io->wchar_bytes, b.io->wchar_bytes);
    EXPECT_EQ(a.io->read_bytes, b.io->read_bytes);
    EXPECT_EQ(a.io->write_bytes, b.io->write_bytes);
    EXPECT_EQ(a.io->cancelled_write_bytes, b.io->cancelled_write_bytes);
  }
}

// Descriptors this process holds now.
int OpenDescriptors() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/fd")) ++count;
  return count - 1;  // the directory_iterator's own
}

void WriteFile(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);  // in place: a kept descriptor sees it
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// "100 (python) S 1 ... 200000 ..." with the parent and start time replaced.
std::string WithParentAndStart(std::string stat, int32_t ppid, uint64_t start) {
  std::vector<std::string> fields;
  size_t close = stat.rfind(')');
  std::string head = stat.substr(0, close + 1);
  std::string rest = stat.substr(close + 2);
  size_t at = 0;
  while (at < rest.size()) {
    size_t space = rest.find(' ', at);
    if (space == std::string::npos) space = rest.size();
    fields.push_back(rest.substr(at, space - at));
    at = space + 1;
  }
  fields[1] = std::to_string(ppid);
  fields[19] = std::to_string(start);
  for (const std::string& f : fields) head += ' ' + f;
  return head;
}

// A writable copy of tests/fixtures/proc_tree, removed at the end.
class FixtureTreeCopy : public ProcTreeCopyTest {
 protected:
  fs::path Proc(const std::string& rest) const { return dir_ / "proc" / rest; }
  ProcessSamplerOptions Options() const {
    ProcessSamplerOptions options;
    options.clock_ticks_per_second = 100;
    options.page_size_bytes = 4096;
    return options;
  }
};

// `run` keeps its samplers in objects it moves.
static_assert(std::is_move_constructible_v<ProcessTreeSampler>);
static_assert(std::is_move_assignable_v<ProcessTreeSampler>);

TEST(ParseProcStat, ResidentPagesWhenTheLineHasThem) {
  Result<ProcStat> stat = ParseProcStat(
      "42 (python) S 1 1 1 0 -1 4 5 0 0 0 7 8 0 0 20 0 3 0 99 69394432 2250000 184467\n", "s");
  ASSERT_TRUE(stat.ok()) << stat.status().ToString();
  EXPECT_EQ(stat->rss_pages, 2250000u);
  EXPECT_EQ(stat->start_time_ticks, 99u);
  // Ending at the start time (field 22) is still a stat line, without RSS.
  Result<ProcStat> short_line =
      ParseProcStat("42 (python) S 1 1 1 0 -1 4 5 0 0 0 7 8 0 0 20 0 3 0 99\n", "s");
  ASSERT_TRUE(short_line.ok()) << short_line.status().ToString();
  EXPECT_FALSE(short_line->rss_pages.has_value());
  Result<ProcStat> bad = ParseProcStat(
      "42 (python) S 1 1 1 0 -1 4 5 0 0 0 7 8 0 0 20 0 3 0 99 1 x 2\n", "/proc/42/stat");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("field 24"), std::string::npos) << bad.status().message();
}

TEST(NewPidRanges, UpwardsAndWrappedAround) {
  using Ranges = std::vector<std::pair<int32_t, int32_t>>;
  EXPECT_EQ(NewPidRanges(4000, 4000), Ranges{});
  EXPECT_EQ(NewPidRanges(4000, 4012), (Ranges{{4001, 4012}}));
  EXPECT_EQ(NewPidRanges(32760, 310),
            (Ranges{{32761, std::numeric_limits<int32_t>::max()}, {1, 310}}));
}

TEST(ProcessTreeSampler, FixtureTreeIsReadProcessTreesTree) {
  Root root(kFixtures + "/proc_tree");
  ProcessReadOptions read_options;
  read_options.clock_ticks_per_second = 100;
  Result<ProcessTree> expected = ReadProcessTree(root, 100, read_options);
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();

  ProcessSamplerOptions options;
  options.clock_ticks_per_second = 100;
  options.page_size_bytes = 4096;  // the fixture's stat counts 4 KiB pages
  ProcessTreeSampler sampler(root, 100, options);
  // The first sample (every file read) and a later one (kept descriptors,
  // slow fields carried over) both give ReadProcessTree's tree.
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE("sample " + std::to_string(i));
    Result<ProcessTree> tree = sampler.Sample();
    ASSERT_TRUE(tree.ok()) << tree.status().ToString();
    EXPECT_EQ(tree->root_pid, 100);
    EXPECT_EQ(Pids(*tree), (std::vector<int32_t>{100, 101, 103, 102}));
    EXPECT_EQ(tree->vanished, expected->vanished);  // pid 150: listed, files gone
    EXPECT_EQ(tree->unreadable, expected->unreadable);
    ASSERT_EQ(tree->processes.size(), expected->processes.size());
    for (size_t p = 0; p < tree->processes.size(); ++p) {
      ExpectSameProcess(tree->processes[p], expected->processes[p]);
    }
  }
  EXPECT_EQ(sampler.samples(), 3);
  EXPECT_GT(sampler.open_files(), 1);  // /proc and the members' stat and io
}

// schedstat: read where the fixture has it, absent where it does not.
TEST(ProcessTreeSampler, FixtureSchedstat) {
  ProcessTreeSampler sampler(Root(kFixtures + "/proc_tree"), 101);
  Result<ProcessTree> tree = sampler.Sample();
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  const ProcessSample* p = Find(*tree, 101);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->sched_cpu_ns, 2518000000u);
  EXPECT_EQ(p->run_delay_ns, 731000000u);
  const ProcessSample* child = Find(*tree, 103);
  ASSERT_NE(child, nullptr);
  EXPECT_FALSE(child->run_delay_ns.has_value());
}

TEST(ProcessTreeSampler, FixtureSubtreeWithoutOptionalFiles) {
  ProcessSamplerOptions options;
  options.read_cmdline = false;
  options.read_io = false;
  options.read_pss = false;
  ProcessTreeSampler sampler(Root(kFixtures + "/proc_tree"), 101, options);
  Result<ProcessTree> tree = sampler.Sample();
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  EXPECT_EQ(Pids(*tree), (std::vector<int32_t>{101, 103}));
  EXPECT_TRUE(tree->processes[0].cmdline.empty());
  EXPECT_FALSE(tree->processes[0].io.has_value());
  EXPECT_FALSE(tree->processes[0].pss_bytes.has_value());
  EXPECT_EQ(tree->processes[0].rss_bytes, 2500000ull * 1024);
}

TEST(ProcessTreeSampler, MissingRootIsNotFound) {
  Root root(kFixtures + "/proc_tree");
  for (int32_t pid : {4242, 150, 0, -1}) {
    ProcessTreeSampler sampler(root, pid);
    Result<ProcessTree> tree = sampler.Sample();
    ASSERT_FALSE(tree.ok()) << pid;
    EXPECT_TRUE(tree.status().IsNotFound()) << pid;
    EXPECT_EQ(tree.status().message(), "pid " + std::to_string(pid));
  }
  ProcessTreeSampler no_proc(Root("/nonexistent-stallscope-root"), 1);
  Result<ProcessTree> tree = no_proc.Sample();
  ASSERT_FALSE(tree.ok());
  EXPECT_NE(tree.status().message().find("/nonexistent-stallscope-root/proc"), std::string::npos)
      << tree.status().message();
}

TEST_F(FixtureTreeCopy, SlowFieldsCarryOverBetweenSlowSamples) {
  // stat gives RSS on every sample; status and smaps_rollup on slow ones.
  ProcessSamplerOptions options = Options();
  options.slow_every = 3;
  ProcessTreeSampler sampler(Root(dir_.string()), 100, options);

  Result<ProcessTree> first = sampler.Sample();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const ProcessSample* root = Find(*first, 100);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->rss_bytes, 9000000ull * 1024);
  EXPECT_EQ(root->vm_peak_bytes, 30000000ull * 1024);
  EXPECT_EQ(root->pss_bytes, 6000000ull * 1024);

  // The process grows; a new worker (104) appears.
  std::string status = Slurp(Proc("100/status"));
  status.replace(status.find("VmPeak:\t30000000"), 16, "VmPeak:\t31000000");
  WriteFile(Proc("100/status"), status);
  std::string rollup = Slurp(Proc("100/smaps_rollup"));
  rollup.replace(rollup.find("6000000"), 7, "6100000");
  WriteFile(Proc("100/smaps_rollup"), rollup);
  std::string stat = Slurp(Proc("100/stat"));
  stat.replace(stat.find(" 2250000 "), 9, " 2500000 ");
  WriteFile(Proc("100/stat"), stat);
  fs::copy(Proc("102"), Proc("104"), fs::copy_options::recursive);
  WriteFile(Proc("104/stat"),
            "104" + WithParentAndStart(Slurp(Proc("102/stat")), 100, 300000).substr(3));

  for (int i = 1; i <= 2; ++i) {
    SCOPED_TRACE("fast sample " + std::to_string(i));
    Result<ProcessTree> fast = sampler.Sample();
    ASSERT_TRUE(fast.ok()) << fast.status().ToString();
    root = Find(*fast, 100);
    ASSERT_NE(root, nullptr);
    EXPECT_EQ(root->rss_bytes, 2500000ull * 4096);       // read
    EXPECT_EQ(root->vm_peak_bytes, 30000000ull * 1024);  // carried over
    EXPECT_EQ(root->pss_bytes, 6000000ull * 1024);       // carried over
    EXPECT_EQ(root->vm_pin_bytes, 2097152ull * 1024);    // carried over
    EXPECT_EQ(root->vm_swap_bytes, 1024ull * 1024);      // carried over
    // A process first seen on a fast sample gets its slow fields at once.
    const ProcessSample* worker = Find(*fast, 104);
    ASSERT_NE(worker, nullptr);
    EXPECT_EQ(worker->ppid, 100);
    EXPECT_EQ(worker->pss_bytes, 900000ull * 1024);
    EXPECT_GT(worker->vm_peak_bytes, 0u);
  }
  Result<ProcessTree> slow = sampler.Sample();  // the 4th: 3 % 3 == 0
  ASSERT_TRUE(slow.ok()) << slow.status().ToString();
  root = Find(*slow, 100);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->vm_peak_bytes, 31000000ull * 1024);
  EXPECT_EQ(root->pss_bytes, 6100000ull * 1024);
  EXPECT_EQ(root->rss_bytes, 2500000ull * 4096);
}

TEST_F(FixtureTreeCopy, IoIsReadAgainAfterATickInDStateAndOnSlowSamples) {
  // A member that did not run issued no read: its io is carried over until
  // it has a CPU tick, is in D state, or a slow sample comes.
  ProcessSamplerOptions options = Options();
  options.slow_every = 5;
  ProcessTreeSampler sampler(Root(dir_.string()), 100, options);
  ASSERT_TRUE(sampler.Sample().ok());  // sample 0: everything read
  auto read_bytes = [&](uint64_t bytes) {
    std::string io = Slurp(Proc("101/io"));
    size_t at = io.find("read_bytes: ") + 12;
    io.replace(at, io.find('\n', at) - at, std::to_string(bytes));
    WriteFile(Proc("101/io"), io);
  };
  auto worker_read = [&]() -> uint64_t {
    Result<ProcessTree> tree = sampler.Sample();
    EXPECT_TRUE(tree.ok()) << tree.status().ToString();
    if (!tree.ok()) return 0;
    const ProcessSample* worker = Find(*tree, 101);
    EXPECT_NE(worker, nullptr);
    return worker && worker->io ? worker->io->read_bytes : 0;
  };
  const std::string stat = Slurp(Proc("101/stat"));
  read_bytes(19000001000);
  EXPECT_EQ(worker_read(), 19000000000u);  // sample 1: no tick, carried over
  WriteFile(Proc("101/stat"), std::string(stat).replace(stat.find(" 30000 "), 7, " 30001 "));
  EXPECT_EQ(worker_read(), 19000001000u);  // sample 2: it ran
  read_bytes(19000002000);
  WriteFile(Proc("101/stat"), std::string(stat)
                                  .replace(stat.find(" 30000 "), 7, " 30001 ")
                                  .replace(stat.find(" R "), 3, " D "));
  EXPECT_EQ(worker_read(), 19000002000u);  // sample 3: no tick, but in D state
  read_bytes(19000003000);
  WriteFile(Proc("101/stat"), std::string(stat).replace(stat.find(" 30000 "), 7, " 30001 "));
  EXPECT_EQ(worker_read(), 19000002000u);  // sample 4: asleep, no tick
  EXPECT_EQ(worker_read(), 19000003000u);  // sample 5: a slow sample
}

TEST_F(FixtureTreeCopy, EveryIoSampleReadsIoWithoutATickAndKeepsTheSlowCadence) {
  // A boundary sample: a member that ran under a tick has its io read now,
  // not at its next tick; the slow files keep their cadence.
  ProcessSamplerOptions options = Options();
  options.slow_every = 2;
  options.quiet_slow_every = 1;  // a quiet member's slow files read on every slow sample
  ProcessTreeSampler sampler(Root(dir_.string()), 100, options);
  ASSERT_TRUE(sampler.Sample().ok());  // sample 0: everything read (slow)
  std::string io = Slurp(Proc("101/io"));
  size_t at = io.find("read_bytes: ") + 12;
  io.replace(at, io.find('\n', at) - at, "19000001000");
  WriteFile(Proc("101/io"), io);
  std::string status = Slurp(Proc("100/status"));
  status.replace(status.find("VmPeak:\t30000000"), 16, "VmPeak:\t31000000");
  WriteFile(Proc("100/status"), status);
  auto read = [&](bool every_io, uint64_t& worker_read, uint64_t& root_peak) {
    Result<ProcessTree> tree = sampler.Sample(every_io);
    ASSERT_TRUE(tree.ok()) << tree.status().ToString();
    const ProcessSample* worker = Find(*tree, 101);
    const ProcessSample* root = Find(*tree, 100);
    ASSERT_TRUE(worker && worker->io && root);
    worker_read = worker->io->read_bytes;
    root_peak = root->vm_peak_bytes;
  };
  uint64_t bytes = 0, peak = 0;
  read(false, bytes, peak);  // no tick: carried over
  EXPECT_EQ(bytes, 19000000000u);
  read(true, bytes, peak);  // every io: read, though no tick; not a slow sample
  EXPECT_EQ(bytes, 19000001000u);
  EXPECT_EQ(peak, 30000000ull * 1024);
  read(false, bytes, peak);  // the 2nd that counts for the cadence: slow
  EXPECT_EQ(peak, 31000000ull * 1024);
}

TEST_F(FixtureTreeCopy, IdleSingleThreadedMemberHasOnlyItsSchedstatRead) {
  // Worker 101 made single-threaded: while its schedstat stands still, its
  // stat is not read (a change there shows on the next slow sample); once
  // the schedstat moves, it is. A member of several threads has its stat
  // read whatever its main thread's schedstat says.
  auto with_threads = [](std::string stat, const char* threads) {
    size_t at = stat.find(" 20 0 ") + 6;  // priority, nice, then the threads
    return stat.replace(at, stat.find(' ', at) - at, threads);
  };
  const std::string stat = with_threads(Slurp(Proc("101/stat")), "1");
  WriteFile(Proc("101/stat"), stat);
  ProcessSamplerOptions options = Options();
  options.slow_every = 4;
  ProcessTreeSampler sampler(Root(dir_.string()), 100, options);
  ASSERT_TRUE(sampler.Sample().ok());  // sample 0: everything read
  auto worker_utime = [&]() -> uint64_t {
    Result<ProcessTree> tree = sampler.Sample();
    EXPECT_TRUE(tree.ok()) << tree.status().ToString();
    if (!tree.ok()) return 0;
    const ProcessSample* worker = Find(*tree, 101);
    EXPECT_NE(worker, nullptr);
    return worker ? worker->utime_ticks : 0;
  };
  const std::string ran = std::string(stat).replace(stat.find(" 30000 "), 7, " 30001 ");
  WriteFile(Proc("101/stat"), ran);
  EXPECT_EQ(worker_utime(), 30000u);  // sample 1: schedstat unchanged
  EXPECT_EQ(sampler.idle_skips(), 1);
  WriteFile(Proc("101/schedstat"), "2519000000 731000000 4212\n");
  EXPECT_EQ(worker_utime(), 30001u);  // sample 2: it ran
  EXPECT_EQ(sampler.idle_skips(), 1);
  const std::string ran_more = std::string(stat).replace(stat.find(" 30000 "), 7, " 30002 ");
  WriteFile(Proc("101/stat"), ran_more);
  EXPECT_EQ(worker_utime(), 30001u);  // sample 3: still again
  EXPECT_EQ(worker_utime(), 30002u);  // sample 4: a slow sample reads it all
  WriteFile(Proc("101/stat"),
            with_threads(std::string(stat).replace(stat.find(" 30000 "), 7, " 30003 "), "4"));
  WriteFile(Proc("101/schedstat"), "2520000000 731000000 4213\n");
  EXPECT_EQ(worker_utime(), 30003u);  // sample 5: it ran and started threads
  WriteFile(Proc("101/stat"),
            with_threads(std::string(stat).replace(stat.find(" 30000 "), 7, " 30004 "), "4"));
  EXPECT_EQ(worker_utime(), 30004u);  // sample 6: four threads: stat read
  EXPECT_EQ(sampler.idle_skips(), 2);
}

TEST_F(FixtureTreeCopy, SchedstatOfZerosNeverStandsForIdle) {
  // A kernel without schedstats prints "0 0 0" for every task: that says
  // nothing about whether it ran, so the stat is read every sample.
  std::string stat = Slurp(Proc("101/stat"));
  size_t at = stat.find(" 20 0 ") + 6;
  stat.replace(at, stat.find(' ', at) - at, "1");
  WriteFile(Proc("101/stat"), stat);
  WriteFile(Proc("101/schedstat"), "0 0 0\n");
  ProcessSamplerOptions options = Options();
  options.slow_every = 100;
  ProcessTreeSampler sampler(Root(dir_.string()), 100, options);
  ASSERT_TRUE(sampler.Sample().ok());
  WriteFile(Proc("101/stat"), std::string(stat).replace(stat.find(" 30000 "), 7, " 30001 "));
  Result<ProcessTree> tree = sampler.Sample();
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  const ProcessSample* worker = Find(*tree, 101);
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ(worker->utime_ticks, 30001u);
  EXPECT_EQ(sampler.idle_skips(), 0);
}

TEST_F(FixtureTreeCopy, QuietMemberKeepsSlowFieldsUpToItsBound) {
  // slow_every 2, quiet_slow_every 3: a member that neither ran, faulted
  // nor changed RSS, in a tree nobody joined or left, has status and
  // smaps_rollup read again only every 3rd slow sample (6 samples).
  ProcessSamplerOptions options = Options();
  options.slow_every = 2;
  options.quiet_slow_every = 3;
  ProcessTreeSampler sampler(Root(dir_.string()), 100, options);
  ASSERT_TRUE(sampler.Sample().ok());  // sample 0: everything read

  auto set_pss = [&](const char* pid, const char* from, const char* to) {
    std::string rollup = Slurp(Proc(std::string(pid) + "/smaps_rollup"));
    size_t at = rollup.find(from);
    ASSERT_NE(at, std::string::npos) << pid;
    rollup.replace(at, std::string_view(from).size(), to);
    WriteFile(Proc(std::string(pid) + "/smaps_rollup"), rollup);
  };
  auto pss_of = [&](const ProcessTree& tree, int32_t pid) {
    const ProcessSample* p = Find(tree, pid);
    return p != nullptr && p->pss_bytes ? *p->pss_bytes / 1024 : 0;
  };
  set_pss("100", "6000000", "6100000");
  // 101 ran: one more tick of utime (field 14, 52340 -> 52341 style edit).
  std::string stat101 = Slurp(Proc("101/stat"));
  Result<ProcStat> parsed101 = ParseProcStat(stat101, "101/stat");
  ASSERT_TRUE(parsed101.ok());
  uint64_t pss101 = 0;
  {
    Result<SmapsRollup> r = ParseSmapsRollup(Slurp(Proc("101/smaps_rollup")), "101");
    ASSERT_TRUE(r.ok());
    pss101 = r->pss_bytes / 1024;
  }
  std::string from = std::to_string(pss101), to = std::to_string(pss101 + 1);
  set_pss("101", from.c_str(), to.c_str());
  std::string utime = " " + std::to_string(parsed101->utime_ticks) + " ";
  stat101.replace(stat101.find(utime), utime.size(),
                  " " + std::to_string(parsed101->utime_ticks + 1) + " ");
  WriteFile(Proc("101/stat"), stat101);

  Result<ProcessTree> t1 = sampler.Sample();  // sample 1: fast
  ASSERT_TRUE(t1.ok());
  Result<ProcessTree> t2 = sampler.Sample();  // sample 2: slow
  ASSERT_TRUE(t2.ok()) << t2.status().ToString();
  EXPECT_EQ(pss_of(*t2, 100), 6000000u);    // quiet: carried over
  EXPECT_EQ(pss_of(*t2, 101), pss101 + 1);  // it ran: read
  EXPECT_GT(sampler.quiet_skips(), 0);
  for (int i = 3; i <= 5; ++i) {
    Result<ProcessTree> t = sampler.Sample();
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(pss_of(*t, 100), 6000000u) << "sample " << i;
  }
  Result<ProcessTree> t6 = sampler.Sample();  // sample 6: the 3rd slow one since
  ASSERT_TRUE(t6.ok());
  EXPECT_EQ(pss_of(*t6, 100), 6100000u);  // the bound: read again

  // A process joining the tree makes every member's slow files due.
  set_pss("100", "6100000", "6200000");
  fs::copy(Proc("102"), Proc("104"), fs::copy_options::recursive);
  WriteFile(Proc("104/stat"),
            "104" + WithParentAndStart(Slurp(Proc("102/stat")), 100, 300000).substr(3));
  ASSERT_TRUE(sampler.Sample().ok());         // sample 7: fast, 104 joins
  Result<ProcessTree> t8 = sampler.Sample();  // sample 8: slow
  ASSERT_TRUE(t8.ok());
  EXPECT_EQ(pss_of(*t8, 100), 6200000u);

  // quiet_slow_every 1 reads every member on every slow sample.
  options.quiet_slow_every = 1;
  ProcessTreeSampler eager(Root(dir_.string()), 100, options);
  ASSERT_TRUE(eager.Sample().ok());
  set_pss("100", "6200000", "6300000");
  ASSERT_TRUE(eager.Sample().ok());
  Result<ProcessTree> e2 = eager.Sample();
  ASSERT_TRUE(e2.ok());
  EXPECT_EQ(pss_of(*e2, 100), 6300000u);
  EXPECT_EQ(eager.quiet_skips(), 0);
}

TEST_F(FixtureTreeCopy, QuietMemberWhoseSlowReadFailedIsReadAgain) {
  // A failed smaps_rollup read is not a read: the quiet gate does not carry
  // its absent PSS over, the next slow sample reads the file again.
  ProcessSamplerOptions options = Options();
  options.slow_every = 2;
  options.quiet_slow_every = 3;
  const std::string good = Slurp(Proc("100/smaps_rollup"));
  WriteFile(Proc("100/smaps_rollup"), "Pss: lots kB\n");
  ProcessTreeSampler sampler(Root(dir_.string()), 100, options);
  Result<ProcessTree> t0 = sampler.Sample();  // sample 0: the rollup is malformed
  ASSERT_TRUE(t0.ok()) << t0.status().ToString();
  ASSERT_NE(Find(*t0, 100), nullptr);
  EXPECT_FALSE(Find(*t0, 100)->pss_bytes.has_value());
  WriteFile(Proc("100/smaps_rollup"), good);
  ASSERT_TRUE(sampler.Sample().ok());         // sample 1: fast
  Result<ProcessTree> t2 = sampler.Sample();  // sample 2: slow, 100 quiet
  ASSERT_TRUE(t2.ok());
  const ProcessSample* root = Find(*t2, 100);
  ASSERT_NE(root, nullptr);
  ASSERT_TRUE(root->pss_bytes.has_value());
  EXPECT_EQ(*root->pss_bytes, 6000000ull * 1024);
}

TEST_F(FixtureTreeCopy, ReusedPidIsANewProcess) {
  ProcessTreeSampler sampler(Root(dir_.string()), 100, Options());
  Result<ProcessTree> before = sampler.Sample();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  ASSERT_EQ(Pids(*before), (std::vector<int32_t>{100, 101, 103, 102}));
  int vanished_before = before->vanished;

  // Member 102 exited and an unrelated process (parent 1, later start time)
  // got its pid, in place: the same /proc entry, so only the start time
  // tells them apart.
  WriteFile(Proc("102/stat"), WithParentAndStart(Slurp(Proc("102/stat")), 1, 999999));
  // Non-member 200 exited and a new child of 101 got its pid: a new /proc
  // entry (the old one removed), as the kernel makes for a new process.
  fs::path fresh = Proc("200.new");
  fs::copy(Proc("200"), fresh, fs::copy_options::recursive);
  WriteFile(fresh / "stat", WithParentAndStart(Slurp(Proc("200/stat")), 101, 999999));
  fs::remove_all(Proc("200"));
  fs::rename(fresh, Proc("200"));

  Result<ProcessTree> after = sampler.Sample();
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(Pids(*after), (std::vector<int32_t>{100, 101, 103, 200}));
  EXPECT_EQ(after->vanished, vanished_before + 1);  // 102, and still 150
  const ProcessSample* adopted = Find(*after, 200);
  ASSERT_NE(adopted, nullptr);
  EXPECT_EQ(adopted->ppid, 101);
  EXPECT_EQ(adopted->start_time_ticks, 999999u);

  // The stranger under pid 102 is not taken for the old member later either.
  Result<ProcessTree> later = sampler.Sample();
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_EQ(Pids(*later), (std::vector<int32_t>{100, 101, 103, 200}));
}

TEST_F(FixtureTreeCopy, RootReplacedUnderItsPidIsNotFound) {
  ProcessTreeSampler sampler(Root(dir_.string()), 100, Options());
  ASSERT_TRUE(sampler.Sample().ok());
  WriteFile(Proc("100/stat"), WithParentAndStart(Slurp(Proc("100/stat")), 1, 999999));
  Result<ProcessTree> tree = sampler.Sample();
  ASSERT_FALSE(tree.ok());
  EXPECT_TRUE(tree.status().IsNotFound());
}

// Forks children that sleep until killed; each can be told to fork more.
class LiveJobTree : public ::testing::Test {
 protected:
  // A child of `parent_pid` (this process or a child of it); returns its pid
  // once it runs. With pdeathsig, it dies with its parent.
  static pid_t SpawnSleeper(bool pdeathsig = true) {
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) return -1;
    pid_t child = ::fork();
    if (child == 0) {
      if (pdeathsig) ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      (void)!::write(ready[1], "x", 1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char byte;
    bool ran = child > 0 && ::read(ready[0], &byte, 1) == 1;
    ::close(ready[0]);
    return ran ? child : -1;
  }

  void SetUp() override {
    // Children an earlier test in this process gave up would count here.
    for (int tries = 0; tries < 1000 && ReapAbandonedChildren() > 0; ++tries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (int i = 0; i < 3; ++i) {
      pid_t child = SpawnSleeper();
      ASSERT_GT(child, 0);
      children_.push_back(child);
    }
  }
  void TearDown() override {
    for (pid_t child : children_) {
      ::kill(child, SIGKILL);
      ::waitpid(child, nullptr, 0);
    }
  }
  void Kill(pid_t child) {
    ASSERT_EQ(::kill(child, SIGKILL), 0);
    ASSERT_EQ(::waitpid(child, nullptr, 0), child);
    children_.erase(std::find(children_.begin(), children_.end(), child));
  }
  std::vector<pid_t> children_;
};

TEST_F(LiveJobTree, FindsNewChildrenAndDropsOnesThatExit) {
  const pid_t self = ::getpid();
  ProcessTreeSampler sampler(Root("/"), self);
  Result<ProcessTree> tree = sampler.Sample();
  ASSERT_TRUE(tree.ok()) << tree.status().ToString();
  ASSERT_EQ(tree->processes.size(), 4u);
  EXPECT_EQ(tree->processes[0].pid, self);
  std::set<int32_t> direct;
  for (const ProcessSample& p : tree->processes) {
    if (p.ppid == self) direct.insert(p.pid);
    EXPECT_GT(p.rss_bytes, 256u * 1024) << p.pid;
    EXPECT_LT(p.rss_bytes, 1ull << 30) << p.pid;
    EXPECT_GE(p.vm_hwm_bytes, p.rss_bytes / 2) << p.pid;
    EXPECT_GT(p.vm_peak_bytes, 0u) << p.pid;
    EXPECT_FALSE(p.cmdline.empty()) << p.pid;
    EXPECT_TRUE(p.io.has_value()) << p.pid;
    EXPECT_TRUE(p.pss_bytes.has_value()) << p.pid;
    EXPECT_GT(p.start_time_ticks, 0u) << p.pid;
  }
  EXPECT_EQ(direct, std::set<int32_t>(children_.begin(), children_.end()));

  // A new child, and a grandchild forked by it: found on the next sample.
  int ready[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    pid_t grandchild = SpawnSleeper();
    (void)!::write(ready[1], &grandchild, sizeof grandchild);
    for (;;) ::pause();
  }
  children_.push_back(parent);
  ::close(ready[1]);
  pid_t grandchild = 0;
  ASSERT_EQ(::read(ready[0], &grandchild, sizeof grandchild),
            static_cast<ssize_t>(sizeof grandchild));
  ::close(ready[0]);
  ASSERT_GT(grandchild, 0);

  Result<ProcessTree> grown = sampler.Sample();
  ASSERT_TRUE(grown.ok()) << grown.status().ToString();
  ASSERT_EQ(grown->processes.size(), 6u);
  const ProcessSample* found = Find(*grown, grandchild);
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->ppid, parent);
  // Depth-first: the grandchild right after its parent.
  std::vector<int32_t> pids = Pids(*grown);
  auto at = std::find(pids.begin(), pids.end(), parent);
  ASSERT_NE(at, pids.end());
  ASSERT_NE(at + 1, pids.end());
  EXPECT_EQ(*(at + 1), grandchild);

  // A leaf exits: gone from the next sample, and counted.
  pid_t leaf = children_[1];
  Kill(leaf);
  Result<ProcessTree> shrunk = sampler.Sample();
  ASSERT_TRUE(shrunk.ok()) << shrunk.status().ToString();
  pids = Pids(*shrunk);
  EXPECT_EQ(pids.size(), 5u);
  EXPECT_EQ(std::count(pids.begin(), pids.end(), leaf), 0);
  EXPECT_EQ(std::count(pids.begin(), pids.end(), grandchild), 1);
  EXPECT_GE(shrunk->vanished, 1);
  // Only the first sample listed all of /proc: the others listed the pids
  // handed out since (this test runs on procfs, in its own pid namespace).
  EXPECT_EQ(sampler.full_listings(), 1);
}

TEST_F(LiveJobTree, OrphanStaysAMemberAfterReparenting) {
  // A child whose own child outlives it: the kernel reparents the grandchild
  // outside the tree (to init or a subreaper); it is still the job's.
  int ready[2];
  ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
  pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    pid_t orphan = SpawnSleeper(/*pdeathsig=*/false);
    (void)!::write(ready[1], &orphan, sizeof orphan);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  pid_t orphan = 0;
  ASSERT_EQ(::read(ready[0], &orphan, sizeof orphan), static_cast<ssize_t>(sizeof orphan));
  ::close(ready[0]);
  ASSERT_GT(orphan, 0);

  ProcessTreeSampler sampler(Root("/"), ::getpid());
  Result<ProcessTree> before = sampler.Sample();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  ASSERT_NE(Find(*before, orphan), nullptr);

  ::kill(parent, SIGKILL);
  ::waitpid(parent, nullptr, 0);
  Result<ProcessTree> after = sampler.Sample();
  ::kill(orphan, SIGKILL);  // not our child any more: init reaps it
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  const ProcessSample* kept = Find(*after, orphan);
  ASSERT_NE(kept, nullptr);
  EXPECT_NE(kept->ppid, parent);
  EXPECT_EQ(Find(*after, parent), nullptr);
  // Listed after the root's subtree, as a root of its own.
  EXPECT_EQ(after->processes.back().pid, orphan);
}

TEST_F(LiveJobTree, DescriptorsAreBoundedCloexecAndClosed) {
  const int before = OpenDescriptors();
  {
    ProcessTreeSampler sampler(Root("/"), ::getpid());
    Result<ProcessTree> tree = sampler.Sample();
    ASSERT_TRUE(tree.ok()) << tree.status().ToString();
    ASSERT_EQ(tree->processes.size(), 4u);
    // /proc (and /proc/loadavg, when new pids can be listed alone), and
    // stat, io, schedstat, status and smaps_rollup of each of the 4 members.
    const int base = sampler.open_files() - 4 * 5;
    EXPECT_TRUE(base == 1 || base == 2) << sampler.open_files();
    EXPECT_EQ(OpenDescriptors(), before + sampler.open_files());
    for (const fs::directory_entry& e : fs::directory_iterator("/proc/self/fd")) {
      int fd = std::stoi(e.path().filename().string());
      std::error_code error;
      std::string target = fs::read_symlink(e.path(), error).string();
      if (target.rfind("/proc/", 0) != 0) continue;
      int flags = ::fcntl(fd, F_GETFD);
      if (flags >= 0) {
        EXPECT_TRUE(flags & FD_CLOEXEC) << target;
      }
    }

    // Two children exit: their descriptors close on the next sample.
    Kill(children_[0]);
    Kill(children_[0]);
    Result<ProcessTree> after = sampler.Sample();
    ASSERT_TRUE(after.ok()) << after.status().ToString();
    EXPECT_EQ(after->processes.size(), 2u);
    EXPECT_EQ(after->vanished, 2);
    EXPECT_EQ(sampler.open_files(), base + 5 * 2);
    EXPECT_EQ(OpenDescriptors(), before + sampler.open_files());
  }
  EXPECT_EQ(OpenDescriptors(), before);
}

TEST_F(LiveJobTree, PastTheBudgetReadsByPathWithTheSameResult) {
  ProcessSamplerOptions options;
  options.max_open_files = 3;  // not even one member's worth
  const int before = OpenDescriptors();
  ProcessTreeSampler bounded(Root("/"), ::getpid(), options);
  ProcessTreeSampler unbounded(Root("/"), ::getpid());
  for (int i = 0; i < 3; ++i) {
    Result<ProcessTree> a = bounded.Sample();
    Result<ProcessTree> b = unbounded.Sample();
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(Pids(*a), Pids(*b));
    for (size_t p = 0; p < a->processes.size(); ++p) {
      EXPECT_EQ(a->processes[p].start_time_ticks, b->processes[p].start_time_ticks);
      EXPECT_EQ(a->processes[p].cmdline, b->processes[p].cmdline);
      EXPECT_TRUE(a->processes[p].io.has_value());
      EXPECT_EQ(a->processes[p].run_delay_ns.has_value(), b->processes[p].run_delay_ns.has_value());
    }
    EXPECT_LE(bounded.open_files(), 2 + 3);
  }
  EXPECT_EQ(OpenDescriptors(), before + bounded.open_files() + unbounded.open_files());
}

TEST_F(LiveJobTree, CmdlineIsReadAgainAfterAnExec) {
  int go[2];
  ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    char byte;
    if (::read(go[0], &byte, 1) != 1) ::_exit(1);
    ::execl("/bin/sleep", "sleep", "600", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(go[0]);
  children_.push_back(child);
  ProcessTreeSampler sampler(Root("/"), ::getpid());
  Result<ProcessTree> forked = sampler.Sample();
  ASSERT_TRUE(forked.ok()) << forked.status().ToString();
  const ProcessSample* before = Find(*forked, child);
  ASSERT_NE(before, nullptr);
  EXPECT_NE(before->comm, "sleep");

  ASSERT_EQ(::write(go[1], "x", 1), 1);
  ::close(go[1]);
  std::string comm;
  for (int i = 0; i < 200 && comm != "sleep\n"; ++i) {
    ::usleep(10000);
    comm = Slurp("/proc/" + std::to_string(child) + "/comm");
  }
  ASSERT_EQ(comm, "sleep\n");
  Result<ProcessTree> execed = sampler.Sample();
  ASSERT_TRUE(execed.ok()) << execed.status().ToString();
  const ProcessSample* after = Find(*execed, child);
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(after->comm, "sleep");
  EXPECT_EQ(after->cmdline, (std::vector<std::string>{"sleep", "600"}));
}

TEST(ProcessTreeSampler, RootThatExitsIsNotFound) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (;;) ::pause();
  }
  ProcessTreeSampler sampler(Root("/"), child);
  Result<ProcessTree> alive = sampler.Sample();
  ASSERT_TRUE(alive.ok()) << alive.status().ToString();
  EXPECT_EQ(Pids(*alive), std::vector<int32_t>{child});
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  Result<ProcessTree> gone = sampler.Sample();
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(gone.status().IsNotFound());
  EXPECT_LE(sampler.open_files(), 2);  // only /proc and /proc/loadavg
}

}  // namespace
}  // namespace stallscope
