#include "probe/host_sampler.h"

#include <fcntl.h>
#include <time.h>

#include <iterator>

#include "core/file.h"
#include "core/host_clock.h"
#include "probe/cpu_stat.h"
#include "probe/diskstats.h"
#include "probe/meminfo.h"
#include "probe/net_dev.h"
#include "probe/pressure.h"
#include "probe/vmstat.h"

namespace stallscope {
namespace {

// In the same order as HostPressure's fields below.
constexpr const char* kPressurePaths[] = {"/proc/pressure/cpu", "/proc/pressure/memory",
                                          "/proc/pressure/io", "/proc/pressure/irq"};
constexpr Pressure HostPressure::*kPressureFields[] = {&HostPressure::cpu, &HostPressure::memory,
                                                       &HostPressure::io, &HostPressure::irq};
// ReadPressureFile's cap: a PSI file is two lines.
constexpr size_t kMaxPressureBytes = 1 << 16;

}  // namespace

HostSampler::HostSampler(const Root& root) {
  meminfo_.path = root.Path("/proc/meminfo");
  vmstat_.path = root.Path("/proc/vmstat");
  vmstat_.until = ReadUntil::kShortOfAPage;
  stat_.path = root.Path("/proc/stat");
  diskstats_.path = root.Path("/proc/diskstats");
  diskstats_.until = ReadUntil::kShortOfAPage;
  net_dev_.path = root.Path("/proc/net/dev");
  net_dev_.until = ReadUntil::kShortOfAPage;
  for (size_t i = 0; i < std::size(pressure_); ++i)
    pressure_[i].path = root.Path(kPressurePaths[i]);
}

int HostSampler::open_files() const {
  int count = 0;
  for (const Source* s : {&meminfo_, &vmstat_, &stat_, &diskstats_, &net_dev_}) {
    count += s->file.is_open();
  }
  for (const Source& s : pressure_) count += s.file.is_open();
  return count;
}

int HostSampler::Read(Source& source) {
  if (source.absent) return ENOENT;
  if (!source.file.is_open()) {
    int err = source.file.Open(AT_FDCWD, source.path.c_str());
    if (err != 0) {
      source.absent = err == ENOENT;
      return err;
    }
  }
  int err = source.file.Read(buffer_, source.until);
  // A read error may be passing (EINTR is retried inside); reopen next time.
  if (err != 0) source.file.Close();
  return err;
}

Result<HostSample> HostSampler::Sample(std::vector<std::string>* notes) {
  HostSample sample;
  sample.monotonic_seconds = MonotonicSeconds();

  if (int err = Read(meminfo_); err != 0) return Status::FromErrno(meminfo_.path, err);
  Result<MemInfo> memory = ParseMemInfo(buffer_.view(), meminfo_.path);
  if (!memory.ok()) return memory.status();
  sample.memory = std::move(*memory);

  if (int err = Read(vmstat_); err != 0) return Status::FromErrno(vmstat_.path, err);
  Result<VmStat> vmstat = ParseVmStat(buffer_.view(), vmstat_.path);
  if (!vmstat.ok()) return vmstat.status();
  sample.vmstat = std::move(*vmstat);

  if (int err = Read(stat_); err != 0) return Status::FromErrno(stat_.path, err);
  Result<CpuStat> cpu = ParseCpuStat(buffer_.view(), stat_.path);
  if (!cpu.ok()) return cpu.status();
  sample.cpu = std::move(*cpu);

  // The optional sources: the note texts are TakeHostSample's.
  auto note = [&](const char* what, const Status& status) {
    if (notes != nullptr) notes->push_back(std::string(what) + ": " + status.message());
  };
  if (int err = Read(diskstats_); err != 0) {
    note("disks", Status::FromErrno(diskstats_.path, err));
  } else if (Result<DiskstatsSample> disks = ParseDiskstats(buffer_.view(), diskstats_.path);
             disks.ok()) {
    sample.disks = std::move(*disks);
  } else {
    note("disks", disks.status());
  }
  if (int err = Read(net_dev_); err != 0) {
    note("network counters", Status::FromErrno(net_dev_.path, err));
  } else if (Result<std::vector<NetDevCounters>> net = ParseNetDev(buffer_.view(), net_dev_.path);
             net.ok()) {
    sample.net = std::move(*net);
  } else {
    note("network counters", net.status());
  }

  // As ReadHostPressure: a file that is missing or refused (EOPNOTSUPP when
  // booted with psi=0) is a resource without pressure; a malformed one drops
  // PSI from this sample with a note.
  HostPressure pressure;
  for (size_t i = 0; i < std::size(pressure_); ++i) {
    if (Read(pressure_[i]) != 0) continue;
    if (buffer_.view().size() > kMaxPressureBytes) {
      note("pressure (PSI)", Status::ParseError(pressure_[i].path, 0, "file too large"));
      return sample;
    }
    Result<Pressure> parsed = ParsePressure(buffer_.view(), pressure_[i].path);
    if (!parsed.ok()) {
      note("pressure (PSI)", parsed.status());
      return sample;
    }
    pressure.*kPressureFields[i] = *parsed;
  }
  if (pressure.memory.present || pressure.io.present || pressure.cpu.present) {
    sample.pressure = std::move(pressure);
  }
  return sample;
}

}  // namespace stallscope
