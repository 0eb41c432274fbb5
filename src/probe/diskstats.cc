#include "probe/diskstats.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>

#include "core/file.h"
#include "core/read_log.h"
#include "core/text.h"

namespace stallscope {
namespace {

std::optional<uint32_t> ParseUint32(std::string_view text) {
  std::optional<uint64_t> value = ParseUint(text);
  if (!value || *value > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(*value);
}

bool Exists(const std::string& path) {
  NoteLinksRead(path);
  return ::access(path.c_str(), F_OK) == 0;
}

std::optional<std::string> RealPath(const std::string& path) {
  NoteLinksRead(path);
  char* resolved = ::realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return std::nullopt;
  std::string out(resolved);
  std::free(resolved);
  return out;
}

std::string_view Basename(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string_view Dirname(std::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  return slash == 0 ? path.substr(0, 1) : path.substr(0, slash);
}

bool HasPrefixThenDigit(std::string_view name, std::string_view prefix) {
  return name.size() > prefix.size() && name.substr(0, prefix.size()) == prefix &&
         std::isdigit(static_cast<unsigned char>(name[prefix.size()]));
}

// `dev` holds "MAJ:MIN".
void ReadDeviceNumber(const std::string& dir, BlockDevice& device) {
  Result<std::string> dev = ReadAttribute(dir + "/dev");
  if (!dev.ok()) return;
  std::string_view text = *dev;
  size_t colon = text.find(':');
  if (colon == std::string_view::npos) return;
  std::optional<uint32_t> major = ParseUint32(text.substr(0, colon));
  std::optional<uint32_t> minor = ParseUint32(text.substr(colon + 1));
  if (!major || !minor) return;
  device.major = major;
  device.minor = minor;
}

// Fills a device from its sysfs directory `dir` and, for a partition, the
// directory of its disk (partitions have no queue/ nor device/).
BlockDevice DescribeDevice(std::string name, const std::string& dir, bool is_partition,
                           std::string disk, const std::string& disk_dir) {
  BlockDevice device;
  device.name = std::move(name);
  device.is_partition = is_partition;
  device.disk = is_partition ? std::move(disk) : device.name;
  ReadDeviceNumber(dir, device);
  if (std::optional<uint64_t> sectors = ReadUintAttribute(dir + "/size")) {
    device.size_bytes = *sectors * kDiskstatsSectorBytes;
  }
  if (std::optional<uint64_t> rotational = ReadUintAttribute(disk_dir + "/queue/rotational")) {
    device.rotational = *rotational != 0;
  }
  if (Result<std::string> model = ReadAttribute(disk_dir + "/device/model"); model.ok()) {
    device.model = *model;
  }
  // On a live host (and in captures that keep the links) /sys/block/<disk>
  // links into /sys/devices; software devices live under
  // /sys/devices/virtual whatever their name.
  std::optional<std::string> real = RealPath(disk_dir);
  device.is_virtual = IsVirtualDiskName(device.disk) ||
                      (real && real->find("/sys/devices/virtual/") != std::string::npos);
  return device;
}

}  // namespace

Result<DiskstatsSample> ParseDiskstats(std::string_view text, std::string_view source) {
  DiskstatsSample sample;
  std::vector<std::string_view> lines = SplitLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const int line_number = static_cast<int>(i + 1);
    // Fields past the 20th (a future kernel) are counted, not stored.
    std::string_view fields[20];
    const size_t count = SplitFieldsInto(lines[i], fields);
    if (count == 0) continue;
    // The kernel's field count includes major, minor and name: 14 = 3 + 11
    // counters, 18 = 3 + 15, 20 = 3 + 17.
    if (count < 14 || (count > 14 && count < 18) || count == 19) {
      return Status::ParseError(
          source, line_number,
          "expected 14, 18 or 20 fields (major, minor, name, counters), got " +
              std::to_string(count));
    }
    const size_t numbers = count - 3;
    DiskCounters counters;
    std::optional<uint32_t> major = ParseUint32(fields[0]);
    std::optional<uint32_t> minor = ParseUint32(fields[1]);
    if (!major || !minor) {
      return Status::ParseError(source, line_number, "bad device number");
    }
    counters.major = *major;
    counters.minor = *minor;
    counters.name = std::string(fields[2]);
    uint64_t values[17] = {};
    const size_t used = std::min<size_t>(numbers, 17);
    for (size_t f = 0; f < used; ++f) {
      std::optional<uint64_t> value = ParseUint(fields[3 + f]);
      if (!value) {
        return Status::ParseError(source, line_number,
                                  "counter " + std::to_string(f + 1) + " is not a number");
      }
      values[f] = *value;
    }
    counters.reads_completed = values[0];
    counters.reads_merged = values[1];
    counters.sectors_read = values[2];
    counters.read_ms = values[3];
    counters.writes_completed = values[4];
    counters.writes_merged = values[5];
    counters.sectors_written = values[6];
    counters.write_ms = values[7];
    counters.in_flight = values[8];
    counters.io_ms = values[9];
    counters.weighted_io_ms = values[10];
    counters.has_discard = count >= 18;
    counters.discards_completed = values[11];
    counters.discards_merged = values[12];
    counters.sectors_discarded = values[13];
    counters.discard_ms = values[14];
    counters.has_flush = count >= 20;
    counters.flushes_completed = values[15];
    counters.flush_ms = values[16];
    sample.devices.push_back(std::move(counters));
  }
  return sample;
}

Result<DiskstatsSample> ReadDiskstats(const Root& root) {
  const std::string path = root.Path("/proc/diskstats");
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  return ParseDiskstats(*text, path);
}

bool IsVirtualDiskName(std::string_view name) {
  if (name.substr(0, 3) == "dm-") return true;
  for (std::string_view prefix : {"loop", "ram", "md", "zram", "nbd"}) {
    if (HasPrefixThenDigit(name, prefix)) return true;
  }
  return false;
}

Result<std::vector<BlockDevice>> ReadBlockDevices(const Root& root) {
  const std::string sys_block = root.Path("/sys/block");
  Result<std::vector<std::string>> disks = ListDirectory(sys_block);
  if (!disks.ok()) return disks.status();
  std::vector<BlockDevice> devices;
  std::set<std::string> seen;
  for (const std::string& disk : *disks) {
    const std::string disk_dir = sys_block + "/" + disk;
    devices.push_back(DescribeDevice(disk, disk_dir, false, disk, disk_dir));
    seen.insert(disk);
    Result<std::vector<std::string>> entries = ListDirectory(disk_dir);
    if (!entries.ok()) continue;
    for (const std::string& entry : *entries) {
      const std::string part_dir = disk_dir + "/" + entry;
      if (!Exists(part_dir + "/partition")) continue;
      devices.push_back(DescribeDevice(entry, part_dir, true, disk, disk_dir));
      seen.insert(entry);
    }
  }
  // Partitions that /sys/block does not nest (an older layout) are found by
  // their `partition` file; their disk is the directory their link points into.
  const std::string class_block = root.Path("/sys/class/block");
  Result<std::vector<std::string>> all = ListDirectory(class_block);
  if (all.ok()) {
    for (const std::string& name : *all) {
      if (seen.count(name) != 0) continue;
      const std::string dir = class_block + "/" + name;
      if (!Exists(dir + "/partition")) continue;
      std::optional<std::string> real = RealPath(dir);
      if (!real) continue;
      const std::string disk_dir(Dirname(*real));
      devices.push_back(DescribeDevice(name, dir, true, std::string(Basename(disk_dir)), disk_dir));
    }
  }
  return devices;
}

Result<BlockDevice> ReadBlockDeviceByNumber(const Root& root, uint32_t major, uint32_t minor) {
  const std::string number = std::to_string(major) + ":" + std::to_string(minor);
  if (std::optional<std::string> real = RealPath(root.Path("/sys/dev/block/" + number))) {
    const std::string name(Basename(*real));
    if (Exists(*real + "/partition")) {
      const std::string disk_dir(Dirname(*real));
      return DescribeDevice(name, *real, true, std::string(Basename(disk_dir)), disk_dir);
    }
    return DescribeDevice(name, *real, false, name, *real);
  }
  Result<std::vector<BlockDevice>> devices = ReadBlockDevices(root);
  if (devices.ok()) {
    for (BlockDevice& device : *devices) {
      if (device.major == major && device.minor == minor) return std::move(device);
    }
  }
  return Status::NotFound("block device " + number);
}

}  // namespace stallscope
