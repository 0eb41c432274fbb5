// Block devices: the counters of /proc/diskstats and the facts of /sys/block.
//
// ParseDiskstats is the pure parser of /proc/diskstats; ReadDiskstats reads it
// under a Root. ReadBlockDevices walks /sys/block (and /sys/class/block) under
// a Root and says which devices are whole disks and which are partitions of
// which disk, with each disk's rotational flag, size and model.
// ReadBlockDeviceByNumber answers for one major:minor through /sys/dev/block.
// The rate arithmetic between two samples is in src/sample/disk_rates.h.
// All functions are stateless and thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/file.h"
#include "core/status.h"
#include "sample/disk.h"

namespace stallscope {

// "<major> <minor> <name> <counters, see DiskCounters>": 14, 18 or 20 fields
// in all. Fields beyond the 20th (a future kernel) are ignored; fewer than 14
// fields, or 15-17 or 19, is a ParseError naming the line.
Result<DiskstatsSample> ParseDiskstats(std::string_view text, std::string_view source);
Result<DiskstatsSample> ReadDiskstats(const Root& root);

// loop*, ram*, dm-*, md*, zram*, nbd*: devices whose IO lands elsewhere.
bool IsVirtualDiskName(std::string_view name);

// Every disk of /sys/block followed by its partitions (sorted by name), then
// any partition only /sys/class/block shows. A missing /sys/block is NotFound;
// a missing attribute is nullopt or empty, never an error.
Result<std::vector<BlockDevice>> ReadBlockDevices(const Root& root);

// The block device numbered major:minor (/sys/dev/block/MAJ:MIN, or the `dev`
// files of /sys/block when that link is missing). NotFound when there is none.
Result<BlockDevice> ReadBlockDeviceByNumber(const Root& root, uint32_t major, uint32_t minor);

}  // namespace stallscope
