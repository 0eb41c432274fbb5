// The iostat -x arithmetic: two /proc/diskstats samples of one device and the
// interval between them -> r/s, rkB/s, r_await, aqu-sz, %util, ...
//
// Pure functions over plain data (no file system, no clock); thread-safe.
// The numbers are those sysstat 12.x prints for `iostat -x` (read in its
// rd_stats.c compute_ext_disk_stats and iostat.c write_ext_stat; the code
// here is our own). With s = interval_seconds and d(X) = after.X - before.X:
//
//   r/s      = d(reads_completed) / s                (w/s, d/s, f/s alike)
//   rkB/s    = d(sectors_read) / s / 2               (512-byte sectors -> kiB)
//   rrqm/s   = d(reads_merged) / s
//   %rrqm    = 100 * d(reads_merged) / (d(reads_merged) + d(reads_completed)),
//              0 when both deltas are 0
//   r_await  = d(read_ms) / d(reads_completed), 0 when no read completed
//   rareq-sz = d(sectors_read) / d(reads_completed) / 2, 0 when no read
//   f_await  = d(flush_ms) / d(flushes_completed), 0 when no flush
//   await    = (d(read_ms) + d(write_ms) + d(discard_ms)) / (d(r) + d(w) + d(d))
//   areq-sz  = (d(sectors r + w + d)) / (d(r) + d(w) + d(d)) / 2
//   aqu-sz   = d(weighted_io_ms) / s / 1000
//   %util    = d(io_ms) / (s * 1000) * 100, capped at 100
//
// iostat takes s from /proc/uptime in hundredths of a second; callers pass
// the interval they measured. A zero-request interval gives await and
// request sizes of 0 (never NaN); an interval <= 0 gives per-second rates of 0.
//
// Counters that go backwards:
//  - A device removed and added again (total requests fell and every sector
//    counter fell or was 0 before) is compared against zeros, as iostat does.
//  - The millisecond fields (read/write/discard/flush ms, io_ms,
//    weighted_io_ms) are printed by the kernel as 32-bit unsigned values, so
//    they wrap at 2^32 ms (io_ms after 49.7 days of busy time, weighted_io_ms
//    sooner on a deep queue): their delta is taken modulo 2^32. iostat gets the
//    same for the await columns by subtracting 32-bit integers; for aqu-sz (and
//    for %util since 12.7) it prints 0 instead, which hides a real interval.
//  - The other counters are 64-bit; one that fell contributes 0, as in iostat.
// iostat prints %util as computed, which can exceed 100 when the two reads of
// /proc/uptime and /proc/diskstats are not simultaneous; we cap it at 100.
#pragma once

#include <vector>

#include "sample/disk.h"

namespace stallscope {

DiskRates ComputeDiskRates(const DiskCounters& before, const DiskCounters& after,
                           double interval_seconds);

// Rates for every device of `after` that is also in `before` (same name and
// major:minor), in the order of `after`. A device that appeared during the
// interval has no baseline and is left out, like a delta metric's first sample.
std::vector<DiskRates> ComputeAllDiskRates(const DiskstatsSample& before,
                                           const DiskstatsSample& after, double interval_seconds);

}  // namespace stallscope
