// Disk samples: per-device counters from /proc/diskstats, what /sys/block says
// about each block device, and the iostat -x rates between two samples.
//
// Plain data. src/probe/diskstats fills DiskCounters and BlockDevice;
// src/sample/disk_rates turns two DiskCounters into DiskRates. Counters are
// since boot (or since the device appeared) and only ever grow, except that
// the kernel prints the millisecond fields as 32-bit values that wrap (see
// disk_rates.h). Values are thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stallscope {

// /proc/diskstats counts sectors of 512 bytes whatever the device's logical
// block size (the block layer's unit, see Documentation/admin-guide/iostats
// and the kernel's SECTOR_SHIFT = 9). Never use queue/logical_block_size to
// turn these into bytes.
inline constexpr uint64_t kDiskstatsSectorBytes = 512;

// One line of /proc/diskstats. Kernels print 14 fields (major, minor, name and
// 11 counters; before 4.18), 18 (4.18: discards) or 20 (5.5: flushes); the
// later groups are flagged by has_discard / has_flush and stay 0 when absent.
// "field N" below is the counter's number in Documentation/admin-guide/iostats.
struct DiskCounters {
  uint32_t major = 0;
  uint32_t minor = 0;
  std::string name;  // "nvme0n1p2", as the kernel names it (no /dev/)

  uint64_t reads_completed = 0;  // field 1
  uint64_t reads_merged = 0;     // field 2
  uint64_t sectors_read = 0;     // field 3, 512-byte sectors
  uint64_t read_ms = 0;          // field 4, summed over requests

  uint64_t writes_completed = 0;  // field 5
  uint64_t writes_merged = 0;     // field 6
  uint64_t sectors_written = 0;   // field 7, 512-byte sectors
  uint64_t write_ms = 0;          // field 8

  uint64_t in_flight = 0;       // field 9, requests in flight now (not a counter)
  uint64_t io_ms = 0;           // field 10, wall time with at least one request in flight
  uint64_t weighted_io_ms = 0;  // field 11, io time weighted by requests in flight

  bool has_discard = false;
  uint64_t discards_completed = 0;  // field 12
  uint64_t discards_merged = 0;     // field 13
  uint64_t sectors_discarded = 0;   // field 14, 512-byte sectors
  uint64_t discard_ms = 0;          // field 15

  bool has_flush = false;
  uint64_t flushes_completed = 0;  // field 16
  uint64_t flush_ms = 0;           // field 17
};

// The whole of /proc/diskstats, in file order.
struct DiskstatsSample {
  std::vector<DiskCounters> devices;
};

// A block device as /sys/block (and /sys/class/block) describes it.
struct BlockDevice {
  std::string name;               // "nvme0n1p2"
  std::optional<uint32_t> major;  // from `dev` ("259:2"); nullopt when unreadable
  std::optional<uint32_t> minor;
  bool is_partition = false;
  std::string disk;  // the whole disk: itself for a disk, "nvme0n1" for nvme0n1p2
  // queue/rotational of the whole disk (partitions have no queue/): true for
  // spinning disks, and for many virtual disks that do not know better.
  std::optional<bool> rotational;
  std::optional<uint64_t> size_bytes;  // `size` (512-byte sectors) * 512
  std::string model;                   // device/model of the disk, trimmed; empty when absent
  // loop, ram, dm-, md, zram, nbd, or anything under /sys/devices/virtual:
  // its IO lands on another device, so it is not where a disk bottleneck lives.
  bool is_virtual = false;
};

// iostat -x (sysstat 12.x) columns over one interval; see disk_rates.h for the
// formulas. kiB is iostat's "kB" (1024 bytes); request sizes are per request.
struct DiskRates {
  std::string name;
  double interval_seconds = 0;

  double reads_per_second = 0;        // r/s
  double read_kib_per_second = 0;     // rkB/s
  double read_merges_per_second = 0;  // rrqm/s
  double read_merge_percent = 0;      // %rrqm
  double read_await_ms = 0;           // r_await
  double read_request_kib = 0;        // rareq-sz

  double writes_per_second = 0;        // w/s
  double write_kib_per_second = 0;     // wkB/s
  double write_merges_per_second = 0;  // wrqm/s
  double write_merge_percent = 0;      // %wrqm
  double write_await_ms = 0;           // w_await
  double write_request_kib = 0;        // wareq-sz

  bool has_discard = false;
  double discards_per_second = 0;        // d/s
  double discard_kib_per_second = 0;     // dkB/s
  double discard_merges_per_second = 0;  // drqm/s
  double discard_merge_percent = 0;      // %drqm
  double discard_await_ms = 0;           // d_await
  double discard_request_kib = 0;        // dareq-sz

  bool has_flush = false;
  double flushes_per_second = 0;  // f/s
  double flush_await_ms = 0;      // f_await

  double await_ms = 0;            // await of iostat -s: reads, writes and discards together
  double request_kib = 0;         // areq-sz of iostat -s
  double average_queue_size = 0;  // aqu-sz
  double util_percent = 0;        // %util, capped at 100
};

}  // namespace stallscope
