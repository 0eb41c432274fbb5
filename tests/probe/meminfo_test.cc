#include "probe/meminfo.h"

#include <gtest/gtest.h>

#include <string>

#include "core/file.h"

namespace stallscope {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kGiB = 1024 * 1024 * 1024;

TEST(MemInfoTest, ParsesLiveCapture) {
  Result<MemInfo> info = ReadMemInfo(Root(STALLSCOPE_FIXTURES "/live_debian12"));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  // The numbers in tests/fixtures/live_debian12/proc/meminfo, times 1024.
  EXPECT_EQ(info->total_bytes, 24683620 * kKiB);
  EXPECT_EQ(info->free_bytes, 17606052 * kKiB);
  ASSERT_TRUE(info->available_bytes.has_value());
  EXPECT_EQ(*info->available_bytes, 17661232 * kKiB);
  EXPECT_EQ(info->buffers_bytes, 2784 * kKiB);
  EXPECT_EQ(info->cached_bytes, 269460 * kKiB);
  EXPECT_EQ(info->mlocked_bytes, 11536 * kKiB);
  EXPECT_EQ(info->dirty_bytes, 4824 * kKiB);
  EXPECT_EQ(info->anon_pages_bytes, 6655008 * kKiB);
  EXPECT_EQ(info->shmem_bytes, 8952 * kKiB);
  EXPECT_EQ(info->slab_reclaimable_bytes, 56828 * kKiB);
  EXPECT_EQ(info->swap_total_bytes, 0u);
  EXPECT_EQ(info->swap_used_bytes(), 0u);
  EXPECT_EQ(info->huge_pages_total, 0u);
  EXPECT_EQ(info->huge_page_size_bytes, 2048 * kKiB);
}

TEST(MemInfoTest, SwapHostShowsSwapInUseAndLowAvailable) {
  Result<MemInfo> info = ReadMemInfo(Root(STALLSCOPE_FIXTURES "/swap_host"));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->total_bytes, 64 * kGiB);
  EXPECT_EQ(info->swap_total_bytes, 8 * kGiB);
  EXPECT_EQ(info->swap_free_bytes, 5 * kGiB);
  EXPECT_EQ(info->swap_used_bytes(), 3 * kGiB);
  ASSERT_TRUE(info->available_bytes.has_value());
  double share = static_cast<double>(*info->available_bytes) / info->total_bytes;
  EXPECT_NEAR(share, 0.12, 0.001);
  // HugePages_* are counts, Hugepagesize is kB.
  EXPECT_EQ(info->huge_pages_total, 512u);
  EXPECT_EQ(info->huge_pages_free, 128u);
  EXPECT_EQ(info->huge_page_size_bytes, 2u * 1024 * 1024);
  EXPECT_EQ(info->hugetlb_bytes, 1 * kGiB);
}

TEST(MemInfoTest, OldKernelWithoutMemAvailable) {
  // A 3.10 kernel's file starts like this: no MemAvailable line.
  Result<MemInfo> info = ParseMemInfo(
      "MemTotal:        8053984 kB\n"
      "MemFree:          250732 kB\n"
      "Buffers:          102400 kB\n"
      "Cached:          4096000 kB\n",
      "meminfo");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_FALSE(info->available_bytes.has_value());
  EXPECT_EQ(info->cached_bytes, 4096000 * kKiB);
  EXPECT_EQ(info->shmem_bytes, 0u);
}

TEST(MemInfoTest, SkipsUnknownFieldsAndHandlesNoTrailingNewline) {
  Result<MemInfo> info =
      ParseMemInfo("MemTotal: 100 kB\nFutureField: whatever format\nMemFree: 7 kB", "m");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->total_bytes, 100 * kKiB);
  EXPECT_EQ(info->free_bytes, 7 * kKiB);
}

struct BadInput {
  const char* text;
  const char* message;
};

TEST(MemInfoTest, MalformedInputNamesFileAndLine) {
  const BadInput cases[] = {
      {"MemTotal: 100 kB\nMemFree 5 kB\n", "/proc/meminfo:2: expected 'Name: value'"},
      {"MemTotal: 100 kB\nMemFree: five kB\n", "/proc/meminfo:2: MemFree: not a number"},
      {"MemTotal: 100\n", "/proc/meminfo:1: MemTotal: expected '<number> kB'"},
      {"MemTotal: 100 MB\n", "/proc/meminfo:1: MemTotal: expected '<number> kB'"},
      {"MemTotal: 100 kB\nHugePages_Total: 4 kB\n",
       "/proc/meminfo:2: HugePages_Total: expected a count"},
      {"MemTotal: 100 kB\nMemFree: -1 kB\n", "/proc/meminfo:2: MemFree: not a number"},
      {"MemTotal: 18014398509481984 kB\n", "/proc/meminfo:1: MemTotal: value overflows bytes"},
      {"MemFree: 5 kB\n", "/proc/meminfo: no MemTotal line"},
      {"", "/proc/meminfo: no MemTotal line"},
      // Truncated mid-line, as a short read would leave it.
      {"MemTotal: 100 kB\nMemFree:", "/proc/meminfo:2: MemFree: expected '<number> kB'"},
  };
  for (const BadInput& bad : cases) {
    Result<MemInfo> info = ParseMemInfo(bad.text, "/proc/meminfo");
    ASSERT_FALSE(info.ok()) << bad.text;
    EXPECT_EQ(info.status().code(), Status::Code::kParseError);
    EXPECT_EQ(info.status().message(), bad.message);
  }
}

TEST(MemInfoTest, MissingFileIsNotFound) {
  Result<MemInfo> info = ReadMemInfo(Root(STALLSCOPE_FIXTURES "/no_such_host"));
  ASSERT_FALSE(info.ok());
  EXPECT_TRUE(info.status().IsNotFound());
}

TEST(EffectiveAvailableTest, HostOnlyWhenUnlimited) {
  MemInfo host;
  host.available_bytes = 10 * kGiB;
  EXPECT_EQ(EffectiveAvailableBytes(host, CgroupMemory{}), 10 * kGiB);
}

TEST(EffectiveAvailableTest, CgroupHeadroomCapsHost) {
  MemInfo host;
  host.available_bytes = 10 * kGiB;
  CgroupMemory cgroup;
  cgroup.limit_bytes = 4 * kGiB;
  cgroup.working_set_bytes = 3 * kGiB;
  EXPECT_EQ(EffectiveAvailableBytes(host, cgroup), 1 * kGiB);
  cgroup.working_set_bytes = 5 * kGiB;  // over the limit: nothing left, not a wrap
  EXPECT_EQ(EffectiveAvailableBytes(host, cgroup), 0u);
  host.available_bytes = kGiB / 2;  // the host is the tighter bound
  cgroup.working_set_bytes = 1 * kGiB;
  EXPECT_EQ(EffectiveAvailableBytes(host, cgroup), kGiB / 2);
}

TEST(EffectiveAvailableTest, EstimatesWithoutMemAvailable) {
  MemInfo host;
  host.free_bytes = 1 * kGiB;
  host.buffers_bytes = 1 * kGiB;
  host.cached_bytes = 2 * kGiB;
  EXPECT_EQ(EffectiveAvailableBytes(host, CgroupMemory{}), 4 * kGiB);
}

}  // namespace
}  // namespace stallscope
