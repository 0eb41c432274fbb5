// The io layer of `doctor` on the host itself, without a recorded run: the
// iostat -x figures of each physical disk over the snapshot's window, judged
// with io.device_saturated's thresholds (analyze/run/rules.h). One window cannot
// show "sustained", so a saturated disk here is a warning: the run rule,
// over many intervals, is what makes it critical. Pure; thread-safe.
#pragma once

#include <vector>

#include "sample/disk.h"
#include "sample/finding.h"

namespace stallscope {

// `devices` tells physical disks from partitions and virtual devices (whose
// IO lands on a disk that is judged itself).
FindingsWithNotes CheckHostDisks(const std::vector<DiskRates>& rates,
                                 const std::vector<BlockDevice>& devices, double window_seconds);

}  // namespace stallscope
