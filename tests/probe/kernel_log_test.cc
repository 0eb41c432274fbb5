// The OOM killer's reports, in every form a user has the kernel log in: a
// real /dev/kmsg capture of a cgroup v1 OOM on this VM's 6.18 kernel, and
// dmesg, dmesg -T and journalctl -k lines written from mm/oom_kill.c's
// formats of 3.10, 4.14 and 5.4.
#include "probe/kernel_log.h"

#include <gtest/gtest.h>

#include <string>

#include "core/file.h"

namespace stallscope {
namespace {

constexpr uint64_t kKiB = 1024;

std::string Fixture(const std::string& name) {
  Result<std::string> text = ReadFile(STALLSCOPE_FIXTURES "/kernel_log/" + name);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : std::string();
}

TEST(OomKills, RealKmsgCaptureOfACgroupOom) {
  std::vector<OomKill> kills = ParseOomKills(Fixture("kmsg-6.18-memcg-v1"));
  ASSERT_EQ(kills.size(), 1u);
  const OomKill& k = kills[0];
  EXPECT_EQ(k.pid, 6319);
  EXPECT_EQ(k.comm, "python3");
  EXPECT_TRUE(k.cgroup);
  ASSERT_TRUE(k.monotonic_seconds.has_value());
  EXPECT_DOUBLE_EQ(*k.monotonic_seconds, 190.838925);
  EXPECT_EQ(k.total_vm_bytes, 323768 * kKiB);
  EXPECT_EQ(k.anon_rss_bytes, 101888 * kKiB);
  EXPECT_EQ(k.file_rss_bytes, 6528 * kKiB);
  EXPECT_EQ(k.shmem_rss_bytes, 0u);
  EXPECT_EQ(k.rss_bytes(), (101888 + 6528) * kKiB);
  EXPECT_EQ(k.line, 81u);
  EXPECT_EQ(k.message.rfind("Memory cgroup out of memory: Killed process 6319 (python3)", 0), 0u)
      << k.message;
}

TEST(OomKills, DmesgGlobalOomAndTheReaperIsNotAKill) {
  std::vector<OomKill> kills = ParseOomKills(Fixture("dmesg-5.4-global"));
  ASSERT_EQ(kills.size(), 1u);  // "oom_reaper: reaped process 2211 ... now 0kB" is not one
  EXPECT_EQ(kills[0].pid, 2211);
  EXPECT_FALSE(kills[0].cgroup);
  EXPECT_DOUBLE_EQ(*kills[0].monotonic_seconds, 12345.600031);
  EXPECT_EQ(kills[0].rss_bytes(), (58123456 + 81234 + 4096) * kKiB);
  EXPECT_EQ(kills[0].line, 7u);
}

TEST(OomKills, DmesgWithWallClockTimesHasNoMonotonicTime) {
  // 4.14: "Kill process ... or sacrifice child" first, then "Killed process".
  std::vector<OomKill> kills = ParseOomKills(Fixture("dmesg-T-4.14-memcg"));
  ASSERT_EQ(kills.size(), 1u);
  EXPECT_EQ(kills[0].pid, 777);
  EXPECT_EQ(kills[0].comm, "pt_data_worker");
  EXPECT_FALSE(kills[0].monotonic_seconds.has_value());
  EXPECT_EQ(kills[0].anon_rss_bytes, 2097152 * kKiB);
  EXPECT_EQ(kills[0].message.rfind("Killed process 777", 0), 0u) << kills[0].message;
}

TEST(OomKills, JournalctlLinesOfAn310KernelWithoutShmem) {
  std::vector<OomKill> kills = ParseOomKills(Fixture("journal-3.10-global"));
  ASSERT_EQ(kills.size(), 1u);
  EXPECT_EQ(kills[0].pid, 31337);
  EXPECT_EQ(kills[0].comm, "python3.11");
  EXPECT_EQ(kills[0].shmem_rss_bytes, 0u);
  EXPECT_EQ(kills[0].rss_bytes(), (1000000 + 2048) * kKiB);
  EXPECT_EQ(kills[0].message.rfind("Killed process 31337", 0), 0u);
}

TEST(OomKills, CommWithSpacesAndParenthesesAndAPidThatIsNotOne) {
  std::vector<OomKill> kills = ParseOomKills(Fixture("kmsg-6.1-odd-comm"));
  ASSERT_EQ(kills.size(), 2u);  // "Killed process notapid" is skipped
  EXPECT_EQ(kills[0].pid, 9001);
  EXPECT_EQ(kills[0].comm, "ray::Train) x");
  EXPECT_EQ(kills[0].anon_rss_bytes, 3000000 * kKiB);
  EXPECT_EQ(kills[0].shmem_rss_bytes, 24 * kKiB);
  EXPECT_EQ(kills[1].pid, 9002);
  EXPECT_FALSE(kills[1].cgroup);
  EXPECT_EQ(kills[1].line, 4u);
}

TEST(OomKills, GarbageIsNoKill) {
  EXPECT_TRUE(ParseOomKills("").empty());
  EXPECT_TRUE(ParseOomKills("Killed process ").empty());
  EXPECT_TRUE(ParseOomKills("Killed process 0 (x) anon-rss:1kB").empty());
  EXPECT_TRUE(ParseOomKills("Killed process 99999999999999999999 (x)").empty());
  std::vector<OomKill> bare = ParseOomKills("Killed process 5 (x) anon-rss:99999999999999999999kB");
  ASSERT_EQ(bare.size(), 1u);
  EXPECT_EQ(bare[0].anon_rss_bytes, 0u);  // no overflow into a wrong figure
  EXPECT_EQ(ParseOomKills("Killed process 5 (x").at(0).comm, "");
}

TEST(OomKills, ReaderKeepsKillsSinceTheRunStarted) {
  const Root root(STALLSCOPE_FIXTURES "/oom_host");
  Result<std::vector<OomKill>> all = ReadOomKills(root);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].pid, 42);  // at 1.0 s since boot
  EXPECT_EQ((*all)[1].pid, 6319);
  EXPECT_EQ((*all)[1].line, 82u);
  Result<std::vector<OomKill>> since = ReadOomKills(root, 100.0);
  ASSERT_TRUE(since.ok());
  ASSERT_EQ(since->size(), 1u);
  EXPECT_EQ((*since)[0].pid, 6319);
}

TEST(OomKills, UnreadableLogNamesTheFile) {
  Result<std::vector<OomKill>> kills = ReadOomKills(Root("/nonexistent-root"));
  ASSERT_FALSE(kills.ok());
  EXPECT_NE(kills.status().message().find("/nonexistent-root/dev/kmsg"), std::string::npos)
      << kills.status().message();
  EXPECT_NE(kills.status().message().find("No such file"), std::string::npos);
}

}  // namespace
}  // namespace stallscope
