#include "analyze/host/storage_rules.h"

#include <gtest/gtest.h>

#include "analyze/catalog.h"

namespace stallscope {
namespace {

StorageSpeed Fast() {
  StorageSpeed s;
  s.path = "/data";
  s.fs_type = "ext4";
  s.jobs = 4;
  s.iodepth = 1;
  s.sequential_bytes_per_second = 1.8e9;
  s.random_iops = 40000;
  return s;
}

const EvidenceValue* Find(const Finding& f, std::string_view name) {
  for (const Evidence& e : f.evidence) {
    if (e.name == name) return &e.value;
  }
  return nullptr;
}

TEST(StorageRules, FastStorageRaisesNothing) {
  EXPECT_TRUE(CheckStorageSpeed(Fast(), StorageThresholds{}).findings.empty());
}

TEST(StorageRules, SlowSequentialIsCriticalWithEvidence) {
  StorageSpeed s = Fast();
  s.sequential_bytes_per_second = 312e6;
  std::vector<Finding> f = CheckStorageSpeed(s, StorageThresholds{}).findings;
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "io.storage_slow");
  EXPECT_EQ(f[0].layer, Layer::kIo);
  EXPECT_EQ(f[0].severity, Severity::kCritical);
  EXPECT_NE(f[0].summary.find("312 MB/s"), std::string::npos) << f[0].summary;
  EXPECT_EQ(f[0].summary.find("IOPS"), std::string::npos) << f[0].summary;
  EXPECT_DOUBLE_EQ(std::get<double>(*Find(f[0], "sequential_read_mb_per_s")), 312);
  EXPECT_DOUBLE_EQ(std::get<double>(*Find(f[0], "sequential_threshold_mb_per_s")), 500);
  EXPECT_FALSE(f[0].next.empty());
  EXPECT_NE(FindRule(f[0].id), nullptr) << "io.storage_slow must be in the catalog";
}

TEST(StorageRules, SlowRandomPointsAtPacking) {
  StorageSpeed s = Fast();
  s.random_iops = 180;  // a spinning disk
  std::vector<Finding> f = CheckStorageSpeed(s, StorageThresholds{}).findings;
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].summary.find("180 IOPS"), std::string::npos);
  EXPECT_NE(f[0].next.find("stallscope pack"), std::string::npos);
}

TEST(StorageRules, BothSlowOnRemoteSaysCopyLocally) {
  StorageSpeed s = Fast();
  s.fs_type = "nfs4";
  s.remote = true;
  s.sequential_bytes_per_second = 110e6;
  s.random_iops = 900;
  std::vector<Finding> f = CheckStorageSpeed(s, StorageThresholds{}).findings;
  ASSERT_EQ(f.size(), 1u);
  EXPECT_NE(f[0].summary.find(" and "), std::string::npos);
  EXPECT_NE(f[0].next.find("local"), std::string::npos);
  EXPECT_EQ(std::get<std::string>(*Find(f[0], "fs_type")), "nfs4");
}

TEST(StorageRules, ThresholdsAreTheFlags) {
  StorageSpeed s = Fast();
  EXPECT_EQ(CheckStorageSpeed(s, StorageThresholds{2e9, 5000}).findings.size(), 1u);
  EXPECT_TRUE(
      CheckStorageSpeed(s, StorageThresholds{1.8e9, 40000}).findings.empty());  // at = passes
  EXPECT_TRUE(CheckStorageSpeed(StorageSpeed{}, StorageThresholds{0, 0}).findings.empty());
}

}  // namespace
}  // namespace stallscope
