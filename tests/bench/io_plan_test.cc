#include "bench/io_plan.h"

#include <gtest/gtest.h>

#include <set>

namespace stallscope {
namespace {

TEST(PlanTestFile, TakesWhatIsAskedWhenHalfTheFreeSpaceAllows) {
  Result<TestFilePlan> plan = PlanTestFile(20 * kGiB, 100 * kGiB, 0, 4, "/data");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->bytes, 20 * kGiB);
  EXPECT_EQ(plan->write_from, 0u);
  EXPECT_FALSE(plan->reuse);
  EXPECT_FALSE(plan->capped);
}

TEST(PlanTestFile, NeverMoreThanHalfTheFreeSpace) {
  Result<TestFilePlan> plan = PlanTestFile(20 * kGiB, 10 * kGiB + 3, 0, 4, "/data");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->bytes, 5 * kGiB);
  EXPECT_TRUE(plan->capped);
  // Rounded down to whole MiB.
  plan = PlanTestFile(20 * kGiB, 101 * kMiB, 0, 4, "/data");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->bytes, 50 * kMiB);
}

TEST(PlanTestFile, RefusesWhenTooLittleNamingThePlaceAndFigures) {
  Result<TestFilePlan> plan = PlanTestFile(20 * kGiB, 20 * kMiB, 0, 4, "/mnt/tiny");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(plan.status().message().find("/mnt/tiny"), std::string::npos);
  EXPECT_NE(plan.status().message().find("20.0 MiB free"), std::string::npos);
  EXPECT_NE(plan.status().message().find("16.0 MiB"), std::string::npos);
}

TEST(PlanTestFile, ReusesAnExistingFileWithoutFreeSpace) {
  // ramfs reports no free space at all; a file already there costs nothing.
  Result<TestFilePlan> plan = PlanTestFile(64 * kMiB, 0, 64 * kMiB, 4, "/r");
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->reuse);
  EXPECT_EQ(plan->bytes, 64 * kMiB);
  // A larger file serves a smaller request: its first bytes are read.
  plan = PlanTestFile(64 * kMiB, 0, 1 * kGiB, 4, "/r");
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->reuse);
  EXPECT_EQ(plan->bytes, 64 * kMiB);
}

TEST(PlanTestFile, ExtendsAShorterFileCountingItAsFreeable) {
  // 1 GiB there, 1 GiB free: the file may grow to half of the 2 GiB.
  Result<TestFilePlan> plan = PlanTestFile(4 * kGiB, 1 * kGiB, 1 * kGiB, 4, "/d");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->bytes, 1 * kGiB);
  EXPECT_TRUE(plan->reuse);
  plan = PlanTestFile(4 * kGiB, 3 * kGiB, 1 * kGiB + 12345, 4, "/d");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->bytes, 2 * kGiB);
  EXPECT_FALSE(plan->reuse);
  EXPECT_EQ(plan->write_from, 1 * kGiB);  // whole MiB kept, the rest rewritten
}

TEST(PlanTestFile, SizeBelowTheMinimumIsBadUsage) {
  Result<TestFilePlan> plan = PlanTestFile(1 * kMiB, 100 * kGiB, 0, 4, "/d");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(plan.status().message().find("--size"), std::string::npos);
  // Many jobs need a MiB each.
  EXPECT_FALSE(PlanTestFile(32 * kMiB, 100 * kGiB, 0, 64, "/d").ok());
  EXPECT_TRUE(PlanTestFile(64 * kMiB, 100 * kGiB, 0, 64, "/d").ok());
}

TEST(SequentialSlice, DisjointAlignedAndCovering) {
  uint64_t file = 1000 * kMiB + 5;
  uint64_t end = 0;
  for (unsigned j = 0; j < 3; ++j) {
    Slice s = SequentialSlice(file, 3, j);
    EXPECT_EQ(s.offset % kMiB, 0u);
    EXPECT_EQ(s.bytes, 333 * kMiB);
    EXPECT_EQ(s.offset, end);
    end = s.offset + s.bytes;
  }
  EXPECT_LE(end, file);
}

TEST(RandomBlockOffset, AlignedInRangeAndSpread) {
  uint64_t state = 1;
  uint64_t file = 64 * kMiB;
  std::set<uint64_t> seen;
  uint64_t low_half = 0;
  for (int i = 0; i < 20000; ++i) {
    uint64_t off = RandomBlockOffset(NextRandom(state), file);
    ASSERT_EQ(off % 4096, 0u);
    ASSERT_LE(off + 4096, file);
    seen.insert(off);
    low_half += off < file / 2;
  }
  // Uniform with repeats (fio --norandommap): 20000 draws of 16384 blocks hit
  // 16384 x (1 - e^(-20000/16384)) = 11550 distinct ones on average.
  EXPECT_NEAR(static_cast<double>(seen.size()), 11550, 250);
  EXPECT_NEAR(static_cast<double>(low_half), 10000, 400);
  EXPECT_EQ(RandomBlockOffset(~0ull, file), file - 4096);
  EXPECT_EQ(RandomBlockOffset(0, file), 0u);
}

}  // namespace
}  // namespace stallscope
