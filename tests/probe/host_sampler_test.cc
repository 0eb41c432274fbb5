// HostSampler on fixture hosts (against the one-shot readers) and on this
// machine (descriptors kept, counters moving).
#include "probe/host_sampler.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/file.h"
#include "core/text.h"
#include "probe/cpu_stat.h"
#include "probe/diskstats.h"
#include "probe/meminfo.h"
#include "probe/net_dev.h"
#include "probe/pressure.h"
#include "probe/vmstat.h"

namespace stallscope {
namespace {

namespace fs = std::filesystem;
const std::string kFixtures = STALLSCOPE_FIXTURES;

int OpenDescriptors() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/fd")) ++count;
  return count - 1;  // the directory_iterator's own
}

// Each sample of a fixture host equals what the one-shot readers give.
void ExpectSameAsReaders(const std::string& host) {
  SCOPED_TRACE(host);
  Root root(kFixtures + "/" + host);
  HostSampler sampler(root);
  for (int i = 0; i < 2; ++i) {
    std::vector<std::string> notes;
    Result<HostSample> sample = sampler.Sample(&notes);
    ASSERT_TRUE(sample.ok()) << sample.status().ToString();
    Result<MemInfo> memory = ReadMemInfo(root);
    ASSERT_TRUE(memory.ok());
    EXPECT_EQ(sample->memory.total_bytes, memory->total_bytes);
    EXPECT_EQ(sample->memory.available_bytes, memory->available_bytes);
    EXPECT_EQ(sample->memory.swap_free_bytes, memory->swap_free_bytes);
    Result<VmStat> vmstat = ReadVmStat(root);
    ASSERT_TRUE(vmstat.ok());
    EXPECT_EQ(sample->vmstat.pgfault, vmstat->pgfault);
    EXPECT_EQ(sample->vmstat.pswpout_pages, vmstat->pswpout_pages);
    EXPECT_EQ(sample->vmstat.workingset_refault, vmstat->workingset_refault);
    Result<CpuStat> cpu = ReadCpuStat(root);
    ASSERT_TRUE(cpu.ok());
    EXPECT_EQ(sample->cpu.total.idle_ticks, cpu->total.idle_ticks);
    EXPECT_EQ(sample->cpu.per_cpu.size(), cpu->per_cpu.size());
    EXPECT_EQ(sample->cpu.context_switches, cpu->context_switches);

    Result<DiskstatsSample> disks = ReadDiskstats(root);
    EXPECT_EQ(sample->disks.devices.size(), disks.ok() ? disks->devices.size() : 0u);
    if (disks.ok() && !disks->devices.empty()) {
      EXPECT_EQ(sample->disks.devices.back().name, disks->devices.back().name);
      EXPECT_EQ(sample->disks.devices.back().sectors_read, disks->devices.back().sectors_read);
    }
    Result<std::vector<NetDevCounters>> net = ReadNetDev(root);
    EXPECT_EQ(sample->net.size(), net.ok() ? net->size() : 0u);
    Result<HostPressure> pressure = ReadHostPressure(root);
    ASSERT_TRUE(pressure.ok());
    EXPECT_EQ(sample->pressure.has_value(),
              pressure->memory.present || pressure->io.present || pressure->cpu.present);
    if (sample->pressure) {
      EXPECT_EQ(sample->pressure->memory.present, pressure->memory.present);
      EXPECT_EQ(sample->pressure->io.present, pressure->io.present);
      if (pressure->memory.some) {
        ASSERT_TRUE(sample->pressure->memory.some.has_value());
        EXPECT_DOUBLE_EQ(sample->pressure->memory.some->avg10_percent,
                         pressure->memory.some->avg10_percent);
      }
    }
    // Notes name what is missing, once per sample.
    EXPECT_EQ(notes.size(), (disks.ok() ? 0u : 1u) + (net.ok() ? 0u : 1u)) << host;
  }
}

// The first word of every line: what stays put while counters move.
std::vector<std::string> LineNames(std::string_view text) {
  std::vector<std::string> names;
  for (std::string_view line : SplitLines(text)) {
    std::vector<std::string_view> fields = SplitFields(line);
    names.emplace_back(fields.empty() ? "" : fields[0]);
  }
  return names;
}

TEST(ProcFile, EveryWayToFindTheEndReadsTheWholeFile) {
  std::string pattern = ::testing::TempDir() + "proc_file_XXXXXX";
  int fd = ::mkstemp(pattern.data());
  ASSERT_GE(fd, 0);
  std::string text;
  for (int i = 0; i < 2000; ++i)
    text += "counter_" + std::to_string(i) + " " + std::to_string(i * 7) + "\n";
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
  for (ReadUntil until : {ReadUntil::kShortRead, ReadUntil::kShortOfAPage, ReadUntil::kEndOfFile}) {
    ProcFile file;
    ASSERT_EQ(file.Open(AT_FDCWD, pattern.c_str()), 0);
    FileBuffer buffer;
    for (int i = 0; i < 2; ++i) {  // the second read starts again at offset 0
      ASSERT_EQ(file.Read(buffer, until), 0);
      EXPECT_EQ(buffer.view(), text);
    }
    ASSERT_EQ(ReadProcFileOnce(AT_FDCWD, pattern.c_str(), buffer, until, 100), 0);
    EXPECT_EQ(buffer.view(), text.substr(0, 100));  // capped
  }
  ::unlink(pattern.c_str());
  FileBuffer buffer;
  EXPECT_EQ(ReadProcFileOnce(AT_FDCWD, pattern.c_str(), buffer, ReadUntil::kShortRead), ENOENT);
  EXPECT_TRUE(buffer.empty());
}

TEST(ProcFile, SeqFilesOfManyPagesAreReadWhole) {
  // /proc/vmstat is over a page, printed a line at a time: each way of
  // finding its end gives every line.
  Result<std::string> expected = ReadFile("/proc/vmstat");
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  ProcFile file;
  ASSERT_EQ(file.Open(AT_FDCWD, "/proc/vmstat"), 0);
  FileBuffer buffer;
  for (ReadUntil until : {ReadUntil::kShortOfAPage, ReadUntil::kEndOfFile}) {
    ASSERT_EQ(file.Read(buffer, until), 0);
    EXPECT_EQ(LineNames(buffer.view()), LineNames(*expected));
  }
}

TEST(HostSampler, FixtureHostsMatchTheReaders) {
  ExpectSameAsReaders("swap_host");
  ExpectSameAsReaders("live_debian12");
  ExpectSameAsReaders("container_v2");
}

TEST(HostSampler, MissingNotesReadLikeTakeHostSamples) {
  HostSampler sampler(Root(kFixtures + "/swap_host"));  // no diskstats, no net/dev
  std::vector<std::string> notes;
  ASSERT_TRUE(sampler.Sample(&notes).ok());
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].rfind("disks: ", 0), 0u) << notes[0];
  EXPECT_NE(notes[0].find("/proc/diskstats"), std::string::npos) << notes[0];
  EXPECT_EQ(notes[1].rfind("network counters: ", 0), 0u) << notes[1];
  EXPECT_TRUE(sampler.Sample(nullptr).ok());  // notes may be null
}

TEST(HostSampler, MissingRequiredFileIsAnErrorNamingIt) {
  HostSampler sampler(Root(kFixtures + "/numa2_host"));
  Result<HostSample> sample = sampler.Sample(nullptr);
  ASSERT_FALSE(sample.ok());
  EXPECT_TRUE(sample.status().IsNotFound());
  EXPECT_NE(sample.status().message().find("/proc/meminfo"), std::string::npos)
      << sample.status().message();
}

TEST(HostSampler, KeptFileSeesANewValue) {
  std::string pattern = ::testing::TempDir() + "host_XXXXXX";
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  fs::path dir = pattern;
  fs::copy(kFixtures + "/swap_host", dir, fs::copy_options::recursive);
  fs::permissions(dir / "proc" / "meminfo", fs::perms::owner_write, fs::perm_options::add);
  HostSampler sampler{Root(dir.string())};
  Result<HostSample> first = sampler.Sample(nullptr);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->memory.total_bytes, 64ull << 30);
  {
    std::ofstream out(dir / "proc" / "meminfo", std::ios::trunc);  // in place
    out << "MemTotal:       1024 kB\nMemFree:         512 kB\n";
  }
  Result<HostSample> second = sampler.Sample(nullptr);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->memory.total_bytes, 1024u * 1024);
  EXPECT_EQ(second->memory.free_bytes, 512u * 1024);
  fs::remove_all(dir);
}

TEST(HostSampler, LiveHostKeepsItsDescriptorsAndCountersMove) {
  const int before = OpenDescriptors();
  {
    HostSampler sampler{Root("/")};
    Result<HostSample> first = sampler.Sample(nullptr);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    const int held = sampler.open_files();
    EXPECT_GE(held, 3);  // meminfo, vmstat, stat at least
    EXPECT_EQ(OpenDescriptors(), before + held);
    for (const fs::directory_entry& e : fs::directory_iterator("/proc/self/fd")) {
      std::error_code error;
      std::string target = fs::read_symlink(e.path(), error).string();
      if (target.rfind("/proc/", 0) != 0) continue;
      int flags = ::fcntl(std::stoi(e.path().filename().string()), F_GETFD);
      if (flags >= 0) {
        EXPECT_TRUE(flags & FD_CLOEXEC) << target;
      }
    }
    ::usleep(20000);
    Result<HostSample> second = sampler.Sample(nullptr);
    ASSERT_TRUE(second.ok()) << second.status().ToString();
    EXPECT_EQ(sampler.open_files(), held);  // the same descriptors, re-read
    EXPECT_GT(second->monotonic_seconds, first->monotonic_seconds);
    EXPECT_GE(second->cpu.context_switches, first->cpu.context_switches);
    EXPECT_GE(
        second->cpu.total.idle_ticks + second->cpu.total.user_ticks +
            second->cpu.total.system_ticks,
        first->cpu.total.idle_ticks + first->cpu.total.user_ticks + first->cpu.total.system_ticks);
    EXPECT_GE(second->vmstat.pgfault, first->vmstat.pgfault);
    EXPECT_GT(second->memory.total_bytes, 0u);
    EXPECT_EQ(second->cpu.per_cpu.size(), first->cpu.per_cpu.size());
    EXPECT_EQ(second->net.size(), first->net.size());
  }
  EXPECT_EQ(OpenDescriptors(), before);
}

}  // namespace
}  // namespace stallscope
