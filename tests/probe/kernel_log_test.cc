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

// Xids and port events: the dmesg -T form of drivers 470-535 (with and
// without "PCI:", with pid='<unknown>', an upper-case bus, a three-digit
// Xid) and the /dev/kmsg records of the gpu_health_host fixture.
TEST(KernelLogXids, DmesgFormsOfSeveralDrivers) {
  KernelLogEvents events = ParseKernelLog(Fixture("dmesg-T-xid-470-535"));
  ASSERT_EQ(events.xids.size(), 5u);
  EXPECT_EQ(events.xids[0].xid, 31);
  EXPECT_EQ(events.xids[0].bus_id, "0000:07:00");
  EXPECT_EQ(events.xids[0].pid, 3460);
  EXPECT_EQ(events.xids[0].process, "python");
  EXPECT_EQ(events.xids[0].line, 2u);
  EXPECT_FALSE(events.xids[0].monotonic_seconds.has_value());  // -T: wall clock only
  EXPECT_EQ(events.xids[1].xid, 45);
  EXPECT_EQ(events.xids[2].xid, 79);
  EXPECT_EQ(events.xids[2].bus_id, "0000:1b:00");  // lower-cased
  EXPECT_FALSE(events.xids[2].pid.has_value());    // pid='<unknown>'
  EXPECT_EQ(events.xids[2].process, "");
  EXPECT_EQ(events.xids[2].message,
            "NVRM: Xid (PCI:0000:1B:00): 79, pid='<unknown>', "
            "name=<unknown>, GPU has fallen off the bus.");
  EXPECT_EQ(events.xids[3].xid, 154);
  EXPECT_EQ(events.xids[4].xid, 13);
  EXPECT_EQ(events.xids[4].bus_id, "0000:02:00");  // the pre-"PCI:" form
  // mlx5's cable event and link down are port events; ipoib's "link becomes
  // ready" and a non-RDMA NIC's "NIC Link is Down" are not.
  ASSERT_EQ(events.port_events.size(), 2u);
  EXPECT_EQ(events.port_events[0].device, "0000:5e:00.0");
  EXPECT_NE(events.port_events[0].message.find("Cable unplugged"), std::string::npos);
  EXPECT_EQ(events.port_events[1].message, "mlx5_core 0000:5e:00.0 ens1f0np0: Link down");
  EXPECT_TRUE(events.kills.empty());
  EXPECT_EQ(ParseXids(Fixture("dmesg-T-xid-470-535")).size(), 5u);
}

TEST(KernelLogXids, KmsgRecordsReadUnderARootWithTheirTimes) {
  Result<KernelLogEvents> events = ReadKernelLog(Root(STALLSCOPE_FIXTURES "/gpu_health_host"));
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  ASSERT_EQ(events->xids.size(), 7u);
  EXPECT_EQ(events->xids.back().xid, 79);
  EXPECT_EQ(events->xids.back().bus_id, "0000:b1:00");
  ASSERT_TRUE(events->xids.back().monotonic_seconds.has_value());
  EXPECT_DOUBLE_EQ(*events->xids.back().monotonic_seconds, 700.112233);
  ASSERT_EQ(events->port_events.size(), 1u);  // "Link up" is not an event
  EXPECT_EQ(events->port_events[0].device, "0000:ca:00.0");
  // Since a time: only what came after.
  Result<KernelLogEvents> later =
      ReadKernelLog(Root(STALLSCOPE_FIXTURES "/gpu_health_host"), 600.0);
  ASSERT_TRUE(later.ok());
  ASSERT_EQ(later->xids.size(), 1u);
  EXPECT_EQ(later->xids[0].xid, 79);
  EXPECT_TRUE(later->port_events.empty());
}

TEST(KernelLogXids, KlogctlPrioritiesAndGarbage) {
  KernelLogEvents events = ParseKernelLog(
      "<4>[  512.345700] NVRM: Xid (PCI:0000:17:00): 48, pid=8802, name=python3, An "
      "uncorrectable double bit error (DBE) has been detected\n"
      "NVRM: Xid (PCI:0000:17:00): , pid=1\n"
      "NVRM: Xid (PCI:0000:17:00): 123456, too many digits\n"
      "NVRM: Xid (\n"
      "mlx5_core: Link down\n");
  ASSERT_EQ(events.xids.size(), 1u);
  EXPECT_EQ(events.xids[0].xid, 48);
  ASSERT_TRUE(events.xids[0].monotonic_seconds.has_value());
  EXPECT_DOUBLE_EQ(*events.xids[0].monotonic_seconds, 512.3457);
  ASSERT_EQ(events.port_events.size(), 1u);
  EXPECT_EQ(events.port_events[0].device, "mlx5_core");
}

}  // namespace
}  // namespace stallscope
