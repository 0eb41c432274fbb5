// The NCCL versions of a log's processes (analyze/nccl_log_versions.h): from
// version lines, and from the line forms of processes that printed none,
// raising distributed.nccl_version_mismatch only where no one version
// prints the forms of both sides.
#include "analyze/nccl_log_versions.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyze/nccl_log_rules.h"
#include "finding_matchers.h"
#include "probe/nccl_log.h"

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
  // Init START (2.18+) and the unindexed bootstrap (2.8-2.23), a minor of
  // slack each side; the indexed bootstrap (2.4-2.7) and a channel with no
  // sub-index (2.7-2.13).
  EXPECT_EQ(NcclVersionRangeText(a.lo, a.hi), "2.17-2.24");
  EXPECT_EQ(NcclVersionRangeText(b.lo, b.hi), "2.6-2.8");
  ASSERT_EQ(b.forms.size(), 2u);
  EXPECT_NE(b.forms[1].find("'Bootstrap : Using [0]IF' (2.4-2.7) at job.log:5"), std::string::npos)
      << b.forms[1];
  EXPECT_EQ(NcclVersionRangeText(24, kNcclLatestMinor), "2.24 or later");
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
  EXPECT_NE(EvidenceOf<std::string>(*f, "versions").find("2.6-2.8 on b:2"), std::string::npos)
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

}  // namespace
}  // namespace stallscope
