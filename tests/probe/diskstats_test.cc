#include "probe/diskstats.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "core/file.h"

namespace stallscope {
namespace {

const std::string kFixtures = STALLSCOPE_FIXTURES;

TEST(ParseDiskstats, LiveCaptureOfThisMachine) {
  Result<DiskstatsSample> sample = ReadDiskstats(Root(kFixtures + "/live_debian12"));
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  ASSERT_EQ(sample->devices.size(), 10u);
  EXPECT_EQ(sample->devices[0].name, "loop0");
  EXPECT_EQ(sample->devices[0].major, 7u);
  EXPECT_EQ(sample->devices[0].reads_completed, 0u);
  // " 254       0 vda 35351 7474 2900994 11759 4886 7084 591840 2344 0 6020 14915
  //   4305 4 223960 630 532 181"
  const DiskCounters& vda = sample->devices[8];
  EXPECT_EQ(vda.name, "vda");
  EXPECT_EQ(vda.major, 254u);
  EXPECT_EQ(vda.minor, 0u);
  EXPECT_EQ(vda.reads_completed, 35351u);
  EXPECT_EQ(vda.reads_merged, 7474u);
  EXPECT_EQ(vda.sectors_read, 2900994u);
  EXPECT_EQ(vda.read_ms, 11759u);
  EXPECT_EQ(vda.writes_completed, 4886u);
  EXPECT_EQ(vda.writes_merged, 7084u);
  EXPECT_EQ(vda.sectors_written, 591840u);
  EXPECT_EQ(vda.write_ms, 2344u);
  EXPECT_EQ(vda.in_flight, 0u);
  EXPECT_EQ(vda.io_ms, 6020u);
  EXPECT_EQ(vda.weighted_io_ms, 14915u);
  EXPECT_TRUE(vda.has_discard);
  EXPECT_EQ(vda.discards_completed, 4305u);
  EXPECT_EQ(vda.discards_merged, 4u);
  EXPECT_EQ(vda.sectors_discarded, 223960u);
  EXPECT_EQ(vda.discard_ms, 630u);
  EXPECT_TRUE(vda.has_flush);
  EXPECT_EQ(vda.flushes_completed, 532u);
  EXPECT_EQ(vda.flush_ms, 181u);
  EXPECT_EQ(sample->devices[9].name, "zram0");
}

TEST(ParseDiskstats, OlderKernelsPrintFewerFields) {
  // 4.18-5.4: 18 fields (discards, no flushes); before 4.18: 14.
  Result<DiskstatsSample> sample = ParseDiskstats(
      "   8       0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n"
      "   8       1 sda1 21 22 23 24 25 26 27 28 29 30 31\n",
      "diskstats");
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  ASSERT_EQ(sample->devices.size(), 2u);
  const DiskCounters& sda = sample->devices[0];
  EXPECT_TRUE(sda.has_discard);
  EXPECT_FALSE(sda.has_flush);
  EXPECT_EQ(sda.weighted_io_ms, 11u);
  EXPECT_EQ(sda.discards_completed, 12u);
  EXPECT_EQ(sda.discard_ms, 15u);
  EXPECT_EQ(sda.flushes_completed, 0u);
  const DiskCounters& sda1 = sample->devices[1];
  EXPECT_FALSE(sda1.has_discard);
  EXPECT_FALSE(sda1.has_flush);
  EXPECT_EQ(sda1.reads_completed, 21u);
  EXPECT_EQ(sda1.weighted_io_ms, 31u);
  EXPECT_EQ(sda1.discards_completed, 0u);
}

TEST(ParseDiskstats, FieldsOfAFutureKernelAreIgnored) {
  Result<DiskstatsSample> sample =
      ParseDiskstats("259 0 nvme0n1 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19", "diskstats");
  ASSERT_TRUE(sample.ok()) << sample.status().ToString();
  EXPECT_EQ(sample->devices.at(0).flush_ms, 17u);
}

TEST(ParseDiskstats, EmptyAndBlankLines) {
  Result<DiskstatsSample> empty = ParseDiskstats("", "diskstats");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->devices.empty());
  Result<DiskstatsSample> blank =
      ParseDiskstats("\n   \n 8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n", "diskstats");
  ASSERT_TRUE(blank.ok());
  EXPECT_EQ(blank->devices.size(), 1u);
}

void ExpectParseError(std::string_view text, std::string_view where) {
  Result<DiskstatsSample> sample = ParseDiskstats(text, "/proc/diskstats");
  ASSERT_FALSE(sample.ok()) << text;
  EXPECT_EQ(sample.status().code(), Status::Code::kParseError);
  EXPECT_NE(sample.status().message().find(where), std::string::npos) << sample.status().message();
}

TEST(ParseDiskstats, MalformedInputNamesFileAndLine) {
  const std::string good = "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n";
  // Truncated mid-line (as a short read would leave it).
  ExpectParseError(good + "8 1 sda1 1 2 3 4 5", "/proc/diskstats:2:");
  // 16 fields (13 counters): no kernel prints that.
  ExpectParseError(good + good + "8 2 sda2 1 2 3 4 5 6 7 8 9 10 11 12 13\n",
                   "/proc/diskstats:3: expected 14, 18 or 20 fields");
  // 19 fields.
  ExpectParseError("8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n", "/proc/diskstats:1:");
  ExpectParseError(good + "8 1 sda1 1 2 x 4 5 6 7 8 9 10 11\n", "/proc/diskstats:2: counter 3");
  ExpectParseError("-8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n", "/proc/diskstats:1: bad device number");
  ExpectParseError("8 99999999999 sda 1 2 3 4 5 6 7 8 9 10 11\n", "/proc/diskstats:1:");
  ExpectParseError("8 0 sda 1 2 3 4 5 6 7 8 9 10 99999999999999999999999\n",
                   "/proc/diskstats:1: counter 11");
  ExpectParseError("sda\n", "/proc/diskstats:1:");
}

TEST(ReadDiskstats, MissingFileIsNotFound) {
  Result<DiskstatsSample> sample = ReadDiskstats(Root(kFixtures + "/no_such_host"));
  ASSERT_FALSE(sample.ok());
  EXPECT_TRUE(sample.status().IsNotFound());
}

TEST(IsVirtualDiskName, SoftwareDevices) {
  for (const char* name : {"loop0", "ram15", "dm-0", "md127", "zram0", "nbd3"}) {
    EXPECT_TRUE(IsVirtualDiskName(name)) << name;
  }
  for (const char* name : {"sda", "nvme0n1", "vda", "mmcblk0", "md", "loop", "xvda", "dm"}) {
    EXPECT_FALSE(IsVirtualDiskName(name)) << name;
  }
}

std::map<std::string, BlockDevice> ByName(const std::vector<BlockDevice>& devices) {
  std::map<std::string, BlockDevice> out;
  for (const BlockDevice& d : devices) out[d.name] = d;
  return out;
}

TEST(ReadBlockDevices, HandMadeHost) {
  Result<std::vector<BlockDevice>> devices = ReadBlockDevices(Root(kFixtures + "/disk_host"));
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  std::vector<std::string> names;
  for (const BlockDevice& d : *devices) names.push_back(d.name);
  EXPECT_EQ(names, (std::vector<std::string>{"dm-0", "loop0", "nvme0n1", "nvme0n1p1", "nvme0n1p2",
                                             "sda"}));
  auto by_name = ByName(*devices);

  const BlockDevice& nvme = by_name["nvme0n1"];
  EXPECT_FALSE(nvme.is_partition);
  EXPECT_EQ(nvme.disk, "nvme0n1");
  EXPECT_EQ(nvme.major, 259u);
  EXPECT_EQ(nvme.minor, 0u);
  EXPECT_EQ(nvme.rotational, false);
  EXPECT_EQ(nvme.size_bytes, 3907029168ull * 512);
  EXPECT_EQ(nvme.model, "Samsung SSD 980 PRO 2TB");
  EXPECT_FALSE(nvme.is_virtual);

  const BlockDevice& p2 = by_name["nvme0n1p2"];
  EXPECT_TRUE(p2.is_partition);
  EXPECT_EQ(p2.disk, "nvme0n1");
  EXPECT_EQ(p2.minor, 2u);
  EXPECT_EQ(p2.size_bytes, 3905978368ull * 512);
  EXPECT_EQ(p2.rotational, false);  // the disk's
  EXPECT_EQ(p2.model, "Samsung SSD 980 PRO 2TB");
  EXPECT_TRUE(by_name["nvme0n1p1"].is_partition);

  const BlockDevice& sda = by_name["sda"];
  EXPECT_EQ(sda.rotational, true);
  EXPECT_EQ(sda.model, "ST4000NM0035-1V4");
  EXPECT_FALSE(sda.is_partition);
  EXPECT_FALSE(sda.is_virtual);

  EXPECT_TRUE(by_name["loop0"].is_virtual);
  EXPECT_EQ(by_name["loop0"].model, "");
  EXPECT_EQ(by_name["loop0"].size_bytes, 0u);
  EXPECT_TRUE(by_name["dm-0"].is_virtual);
  EXPECT_FALSE(by_name["dm-0"].is_partition);
}

TEST(ReadBlockDevices, LiveCaptureOfThisMachine) {
  Result<std::vector<BlockDevice>> devices = ReadBlockDevices(Root(kFixtures + "/live_debian12"));
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  EXPECT_EQ(devices->size(), 10u);
  auto by_name = ByName(*devices);
  const BlockDevice& vda = by_name["vda"];
  EXPECT_EQ(vda.major, 254u);
  EXPECT_EQ(vda.size_bytes, 536870912ull * 512);
  EXPECT_EQ(vda.rotational, true);  // virtio says so; it knows no better
  EXPECT_FALSE(vda.is_virtual);
  EXPECT_FALSE(vda.is_partition);
  // zram0 by its name, and by its place under /sys/devices/virtual.
  EXPECT_TRUE(by_name["zram0"].is_virtual);
  EXPECT_TRUE(by_name["loop7"].is_virtual);
}

TEST(ReadBlockDevices, PartitionOnlyInSysClassBlock) {
  // A layout where the partition is not nested under /sys/block/<disk>:
  // found through its `partition` file, its disk from where its link points.
  namespace fs = std::filesystem;
  const fs::path root = fs::path(testing::TempDir()) / "class_block_host";
  fs::remove_all(root);
  fs::create_directories(root / "sys/block");
  fs::create_directories(root / "sys/devices/pci0/block/sdb/queue");
  fs::create_directories(root / "sys/devices/pci0/block/sdb/sdb1");
  fs::create_directories(root / "sys/class/block");
  std::ofstream(root / "sys/devices/pci0/block/sdb/queue/rotational") << "1\n";
  std::ofstream(root / "sys/devices/pci0/block/sdb/sdb1/partition") << "1\n";
  std::ofstream(root / "sys/devices/pci0/block/sdb/sdb1/dev") << "8:17\n";
  fs::create_directory_symlink("../../devices/pci0/block/sdb/sdb1", root / "sys/class/block/sdb1");
  Result<std::vector<BlockDevice>> devices = ReadBlockDevices(Root(root.string()));
  ASSERT_TRUE(devices.ok()) << devices.status().ToString();
  ASSERT_EQ(devices->size(), 1u);
  EXPECT_EQ((*devices)[0].name, "sdb1");
  EXPECT_TRUE((*devices)[0].is_partition);
  EXPECT_EQ((*devices)[0].disk, "sdb");
  EXPECT_EQ((*devices)[0].minor, 17u);
  EXPECT_EQ((*devices)[0].rotational, true);
  fs::remove_all(root);
}

TEST(ReadBlockDevices, MissingSysBlockIsNotFound) {
  Result<std::vector<BlockDevice>> devices = ReadBlockDevices(Root(kFixtures + "/no_such_host"));
  ASSERT_FALSE(devices.ok());
  EXPECT_TRUE(devices.status().IsNotFound());
}

TEST(ReadBlockDeviceByNumber, ThroughSysDevBlock) {
  Root root(kFixtures + "/disk_host");
  Result<BlockDevice> p2 = ReadBlockDeviceByNumber(root, 259, 2);
  ASSERT_TRUE(p2.ok()) << p2.status().ToString();
  EXPECT_EQ(p2->name, "nvme0n1p2");
  EXPECT_TRUE(p2->is_partition);
  EXPECT_EQ(p2->disk, "nvme0n1");
  EXPECT_EQ(p2->rotational, false);
  Result<BlockDevice> sda = ReadBlockDeviceByNumber(root, 8, 0);
  ASSERT_TRUE(sda.ok());
  EXPECT_EQ(sda->name, "sda");
  EXPECT_EQ(sda->disk, "sda");
  Result<BlockDevice> missing = ReadBlockDeviceByNumber(root, 8, 16);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound());

  Result<BlockDevice> vda = ReadBlockDeviceByNumber(Root(kFixtures + "/live_debian12"), 254, 0);
  ASSERT_TRUE(vda.ok()) << vda.status().ToString();
  EXPECT_EQ(vda->name, "vda");
  EXPECT_FALSE(vda->is_virtual);
}

TEST(ReadBlockDevices, LiveMachine) {
  Result<std::vector<BlockDevice>> devices = ReadBlockDevices(Root("/"));
  if (!devices.ok()) GTEST_SKIP() << devices.status().ToString();
  for (const BlockDevice& d : *devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_FALSE(d.disk.empty());
    if (!d.is_partition) {
      EXPECT_EQ(d.disk, d.name);
    }
  }
}

}  // namespace
}  // namespace stallscope
