#include "sample/dataset.h"

namespace stallscope {

std::string SizeBucketLabel(size_t bucket) {
  static constexpr const char* kLabels[kSizeBuckets] = {"<4K",    "4K-64K",   "64K-1M",
                                                        "1M-16M", "16M-256M", ">=256M"};
  return bucket < kSizeBuckets ? kLabels[bucket] : "";
}

size_t SizeBucketOf(uint64_t size_bytes) {
  for (size_t i = 0; i < kSizeBucketUpper.size(); ++i) {
    if (size_bytes < kSizeBucketUpper[i]) return i;
  }
  return kSizeBuckets - 1;
}

uint64_t DatasetCensus::SmallFiles() const {
  return histogram[0].files + histogram[1].files + histogram[2].files;
}

uint64_t DatasetCensus::SmallBytes() const {
  return histogram[0].bytes + histogram[1].bytes + histogram[2].bytes;
}

}  // namespace stallscope
