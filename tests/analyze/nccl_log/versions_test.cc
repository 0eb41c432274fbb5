// The NCCL versions of a log's processes (analyze/nccl_log/versions.h): from
// version lines, and from the line forms of processes that printed none,
// raising distributed.nccl_version_mismatch only where no one version
// prints the forms of both sides.
#include "analyze/nccl_log/versions.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyze/nccl_log/rules.h"
#include "finding_matchers.h"
#include "formats/nccl_log/nccl_log.h"

namespace stallscope {
namespace {

FindingsWithNotes Check(const std::string& text) {
  return CheckNcclLog(ParseNcclLog(text), std::nullopt, "job.log");
}

// A 2.18-era process (no version line) and a 2.7-era one.
const std::string k218Forms =
    "a:1:1 [0] NCCL INFO cudaDriverVersion 12020\n"
    "a:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
    "a:1:5 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x9 - "
    "Init START\n"
    "a:1:5 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0\n";
const std::string k27Forms =
    "b:2:2 [0] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.2<0>\n"
    "b:2:6 [0] NCCL INFO Using network IB\n"
    "b:2:6 [0] NCCL INFO Channel 00 : 0[1b000] -> 1[1b000] [receive] via NET/IB/0\n"
    "b:2:6 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 1b000 - Init COMPLETE\n";

TEST(NcclVersions, FormsNarrowAProcesssVersion) {
  NcclLogSummary log = ParseNcclLog(k218Forms + k27Forms);
  ASSERT_EQ(log.processes.size(), 2u);
  NcclFormsVersion a = NcclVersionOfForms(log.processes[0], "job.log");
  NcclFormsVersion b = NcclVersionOfForms(log.processes[1], "job.log");
  // Init START (2.18.3+) and the unindexed bootstrap (2.8-2.23); the indexed
  // bootstrap (2.4.8-2.7) and a channel with no sub-index (2.7-2.13): the
  // tags' ranges, no wider.
  EXPECT_EQ(NcclVersionRangeText(a.lo, a.hi), "2.18.3-2.23");
  EXPECT_EQ(NcclVersionRangeText(b.lo, b.hi), "2.7");
  ASSERT_EQ(b.forms.size(), 2u);
  EXPECT_NE(b.forms[1].find("'Bootstrap : Using [0]IF' (2.4.8-2.7) at job.log:5"),
            std::string::npos)
      << b.forms[1];
  EXPECT_EQ(NcclVersionRangeText(NcclVersionCode(24), kNcclLatest), "2.24 or later");
  EXPECT_EQ(NcclVersionRangeText(NcclVersionCode(18, 3), NcclVersionCode(18, kAnyPatch)),
            "2.18.3 or a later 2.18");
  // No form that only some versions print: nothing told.
  NcclLogSummary none = ParseNcclLog("c:3:3 [0] NCCL INFO NET/IB : No device found.\n");
  EXPECT_FALSE(NcclVersionOfForms(none.processes[0], "").Narrowed());
}

TEST(NcclVersions, MismatchFromLineFormsAlone) {
  auto r = Check(k218Forms + k27Forms);
  const Finding* f = Find(r.findings, "distributed.nccl_version_mismatch");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "inferred_from"), "NCCL's line forms");
  EXPECT_NE(EvidenceOf<std::string>(*f, "versions").find("2.7 on b:2"), std::string::npos)
      << EvidenceOf<std::string>(*f, "versions");
  EXPECT_NE(f->next.find("NCCL_DEBUG=VERSION"), std::string::npos) << f->next;
}

TEST(NcclVersions, FormsThatAllowThePrintedVersionAreNoMismatch) {
  // One host printed 2.18.3; the other printed no version but 2.18's forms.
  auto same = Check("a:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n" + k218Forms +
                    "c:3:3 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.3<0>\n"
                    "c:3:7 [0] NCCL INFO comm 0x3 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 "
                    "commId 0x9 - Init START\n");
  EXPECT_EQ(Find(same.findings, "distributed.nccl_version_mismatch"), nullptr)
      << Ids(same.findings);
  // Two processes with no version whose forms share a version: one version.
  auto alike = Check(k27Forms + "c:3:3 [0] NCCL INFO Using network IB\n");
  EXPECT_EQ(Find(alike.findings, "distributed.nccl_version_mismatch"), nullptr)
      << Ids(alike.findings);
  // A version printed bare (no prefix, no process) explains forms it fits.
  auto bare = Check("NCCL version 2.7.8+cuda11.0\n" + k27Forms +
                    "a:1:1 [0] NCCL INFO NCCL version 2.7.8+cuda11.0\n");
  EXPECT_EQ(Find(bare.findings, "distributed.nccl_version_mismatch"), nullptr)
      << Ids(bare.findings);
}

TEST(NcclVersions, PrintedVersionAgainstOtherForms) {
  auto r = Check("a:1:1 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n" + k218Forms + k27Forms);
  const Finding* f = Find(r.findings, "distributed.nccl_version_mismatch");
  ASSERT_NE(f, nullptr) << Ids(r.findings);
  EXPECT_EQ(EvidenceOf<int64_t>(*f, "distinct_versions"), 2);
  EXPECT_EQ(EvidenceOf<std::string>(*f, "inferred_from"), "NCCL's line forms; NCCL's version line");
}

// Each form alone, and the versions shown for it: the first and last NCCL
// tags that print it (git history of NVIDIA/nccl), not a minor wider.
TEST(NcclVersions, EachFormShowsTheTagsThatPrintIt) {
  const std::pair<std::string, std::string> kForms[] = {
      {"Ring 00 : 0[1b000] -> 1[1c000] via P2P/IPC", "2.3-2.6"},
      {"Channel 00 : 0[1b000] -> 1[1c000] via P2P/IPC", "2.7-2.13"},
      {"Channel 00/0 : 0[1b000] -> 1[1c000] [send] via NET/IB/0", "2.12 or later"},
      {"Channel 00 : 0[1b000] -> 1[1c000] via direct shared memory", "2.3-2.12"},
      {"Channel 00 : 0[1b000] -> 1[1c000] via SHM/direct/direct", "2.13 or later"},
      {"Bootstrap : Using [0]eth0:10.0.0.1<0>", "2.4.8-2.7"},
      {"Bootstrap : Using eth0:10.0.0.1<0>", "2.8-2.23"},
      {"Bootstrap: Using eth0:10.0.0.1<0>", "2.24 or later"},
      {"Using internal Network Socket", "2.3"},
      {"Using network IB", "2.6 or later"},
      {"comm 0x1 rank 0 nranks 2 - COMPLETE", "2.3"},
      {"comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x9 - Init START",
       "2.18.3 or later"},
      {"cudaDriverVersion 12020", "2.13 or later"},
      {"comm 0x1 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0", "2.20 or later"},
      {"Init timings - ncclCommInitRank: rank 0 nranks 2 total 0.51 (kernels 0.10)",
       "2.22 or later"},
  };
  for (const auto& [line, shown] : kForms) {
    NcclLogSummary log = ParseNcclLog("a:1:1 [0] NCCL INFO " + line + "\n");
    ASSERT_EQ(log.processes.size(), 1u) << line;
    NcclFormsVersion v = NcclVersionOfForms(log.processes[0], "");
    ASSERT_TRUE(v.Narrowed()) << line;
    EXPECT_EQ(NcclVersionRangeText(v.lo, v.hi), shown) << line;
  }
}

TEST(NcclVersions, APatchBeforeAFormsFirstTagIsAnotherVersion) {
  // Init START starts at 2.18.3: a process that prints it beside a printed
  // 2.18.1 runs another NCCL; beside a printed 2.18.5, the same one.
  const std::string start =
      "b:2:2 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x9 - "
      "Init START\n";
  auto older = Check("a:1:1 [0] NCCL INFO NCCL version 2.18.1+cuda12.1\n" + start);
  const Finding* f = Find(older.findings, "distributed.nccl_version_mismatch");
  ASSERT_NE(f, nullptr) << Ids(older.findings);
  EXPECT_NE(EvidenceOf<std::string>(*f, "versions").find("2.18.3 or later on b:2"),
            std::string::npos)
      << EvidenceOf<std::string>(*f, "versions");
  auto same = Check("a:1:1 [0] NCCL INFO NCCL version 2.18.5+cuda12.2\n" + start);
  EXPECT_EQ(Find(same.findings, "distributed.nccl_version_mismatch"), nullptr)
      << Ids(same.findings);
  // The indexed bootstrap starts at 2.4.8: a printed 2.4.7 is another version.
  auto v247 = Check(
      "a:1:1 [0] NCCL INFO NCCL version 2.4.7+cuda10.1\n"
      "b:2:2 [0] NCCL INFO Bootstrap : Using [0]eth0:10.0.0.2<0>\n");
  EXPECT_NE(Find(v247.findings, "distributed.nccl_version_mismatch"), nullptr)
      << Ids(v247.findings);
}

}  // namespace
}  // namespace stallscope
