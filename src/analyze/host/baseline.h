// The host baseline of `doctor --save-baseline B.json` / `--baseline B.json`:
// the figures of a healthy host that should not move (memory, swap, disks,
// NIC speeds and MTUs, RDMA port rates, the storage bench's MB/s and IOPS),
// saved once and compared later, so a node that drifted since it was healthy
// says so (SuperBench's idea: flag a metric more than a set share below its
// baseline; slow drift goes unnoticed without a record of the healthy host).
//
// The file is JSON, schema "stallscope.baseline/1" (docs/commands/doctor.md):
//   {"schema": "stallscope.baseline/1", "host": "n1", "time_utc": "...",
//    "metrics": [{"name": "network.eth0.speed_mbps", "layer": "network",
//                 "value": 100000, "unit": "Mb/s"}, ...]}
// Every metric is "higher is better": the comparison flags drops only.
//
// BaselineFromSnapshot and CompareBaseline are pure; ParseBaseline judges
// outside input (fuzzed: fuzz/baseline_fuzz.cc). Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/host/storage_rules.h"
#include "core/status.h"
#include "sample/finding.h"
#include "sample/snapshot.h"

namespace stallscope {

inline constexpr std::string_view kBaselineSchema = "stallscope.baseline/1";
// A metric more than this share below its baseline has drifted (SuperBench's
// default criterion for its node validation is of this order; ours).
inline constexpr double kDriftDefaultShare = 0.10;
// A drop of half or more is a part that is gone or renegotiated (a 100G NIC
// at 10G, a halved RAM): critical.
inline constexpr double kDriftCriticalShare = 0.50;

struct BaselineMetric {
  std::string name;  // "memory.total_bytes", "network.eth0.speed_mbps"
  Layer layer = Layer::kMemory;
  double value = 0;
  std::string unit;  // "bytes", "Mb/s", "MB/s", "IOPS"
};

struct HostBaseline {
  std::string host;
  std::string time_utc;
  std::vector<BaselineMetric> metrics;  // names unique
};

// The figures of this host worth keeping: MemTotal (and the cgroup limit),
// SwapTotal, each physical disk's size, each physical / IPoIB / bond NIC's
// speed and MTU when known, each RDMA port's rate, and the bench's figures
// when `bench` is given.
HostBaseline BaselineFromSnapshot(const Snapshot& snapshot, const StorageSpeed* bench);

std::string BaselineToJson(const HostBaseline& baseline);

// `source` names the file in errors: "B.json: metrics[3]: no \"value\"".
Result<HostBaseline> ParseBaseline(std::string_view text, std::string_view source);

// memory.baseline_drift, io.baseline_drift, network.baseline_drift: one
// finding per metric of `baseline` that is more than `share` below it `now`,
// or absent now (a NIC gone). Bench metrics absent now (the bench did not
// run) are not compared; they are named in `not_compared`.
FindingsWithNotes CompareBaseline(const HostBaseline& baseline, const HostBaseline& now,
                                  double share, std::vector<std::string>* not_compared);

}  // namespace stallscope
