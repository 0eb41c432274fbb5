#include "bench/io_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/units.h"

namespace stallscope {

Result<TestFilePlan> PlanTestFile(uint64_t requested, uint64_t free_bytes, uint64_t existing_bytes,
                                  unsigned jobs, const std::string& where) {
  uint64_t minimum = std::max<uint64_t>(kMinTestFileBytes, uint64_t{jobs} * kMiB);
  uint64_t wanted = requested / kMiB * kMiB;
  if (wanted < minimum) {
    return Status::InvalidArgument(fmt::format(
        "--size {}: the test file must be at least {} ({} jobs need a 1 MiB slice each, and "
        "smaller files measure the device's cache)",
        requested, FormatBytes(minimum), jobs));
  }
  TestFilePlan plan;
  if (existing_bytes >= wanted) {
    plan.bytes = wanted;
    plan.write_from = wanted;
    plan.reuse = true;
    return plan;
  }
  // The file as it will be may take half of what is free once the old one is
  // counted back in.
  uint64_t budget = (free_bytes / 2 + existing_bytes / 2) / kMiB * kMiB;
  plan.bytes = std::min(wanted, budget);
  plan.capped = plan.bytes < wanted;
  if (plan.bytes < minimum) {
    return Status::Unavailable(fmt::format(
        "{}: too little free space for the test file: {} free, and the file may take at most "
        "half of it ({}) but needs at least {}; free some space or pick another PATH",
        where, FormatBytes(free_bytes), FormatBytes(budget), FormatBytes(minimum)));
  }
  if (existing_bytes >= plan.bytes) {
    plan.reuse = true;
    plan.write_from = plan.bytes;
  } else {
    plan.write_from = existing_bytes / kMiB * kMiB;
  }
  return plan;
}

Slice SequentialSlice(uint64_t file_bytes, unsigned jobs, unsigned job) {
  if (jobs == 0) return {};
  uint64_t blocks = file_bytes / kSequentialBlockBytes / jobs;
  Slice slice;
  slice.bytes = blocks * kSequentialBlockBytes;
  slice.offset = slice.bytes * job;
  return slice;
}

uint64_t RandomBlockOffset(uint64_t random64, uint64_t file_bytes) {
  uint64_t blocks = file_bytes / kRandomBlockBytes;
  if (blocks == 0) return 0;
  __extension__ using Wide = unsigned __int128;  // -Wpedantic: a GCC/Clang extension
  Wide product = static_cast<Wide>(random64) * blocks;
  return static_cast<uint64_t>(product >> 64) * kRandomBlockBytes;
}

uint64_t NextRandom(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace stallscope
