// The last rank into each gradient bucket's all-reduce
// (analyze/run/bucket_arrivals.h), on bucket records made by hand: one run file
// (launches compared as written), two files (nodes) with clocks 40 s apart
// (aligned on the completions), buckets a rank did not report and the
// warm-up left out, and nothing for one rank.
#include "analyze/run/bucket_arrivals.h"

#include <gtest/gtest.h>

#include <vector>

namespace stallscope {
namespace {

// Steps 0..steps-1, two buckets each; rank `late` launches every bucket
// `late_s` after the others (who launch at step + 0.1 and + 0.2); all
// complete 10 ms after the last launch; `shift` added to the times of the
// ranks in `shifted`.
std::vector<BucketSync> Records(int ranks, int steps, int late, double late_s, double shift = 0,
                                std::vector<int> shifted = {}) {
  std::vector<BucketSync> out;
  for (int s = 0; s < steps; ++s) {
    for (int b = 0; b < 2; ++b) {
      double launch = s + 0.1 * (b + 1);
      for (int r = 0; r < ranks; ++r) {
        double mine = launch + (r == late ? late_s : 0);
        double done = launch + late_s + 0.01;
        double d = std::find(shifted.begin(), shifted.end(), r) != shifted.end() ? shift : 0;
        out.push_back({r, s, b, mine + d, done + d});
      }
    }
  }
  return out;
}

TEST(BucketArrivals, OneFileTheLateRankEntersEveryBucketLast) {
  std::vector<BucketSync> records = Records(4, 6, 2, 0.05);
  BucketArrivals got = FindBucketArrivals({&records}, 2);
  EXPECT_FALSE(got.aligned);
  EXPECT_EQ(got.buckets, 8u);  // steps 2..5, two buckets each
  EXPECT_EQ(got.steps, 4u);
  EXPECT_EQ(got.last_in.at(2), 8u);
  EXPECT_EQ(got.last_in.count(0), 0u);
  EXPECT_NEAR(got.others_wait_s.at(2), 8 * 0.05, 1e-9);
}

TEST(BucketArrivals, TwoFilesAreAlignedOnTheCompletions) {
  // ranks 2 and 3 in node b's file, whose clock reads 40 s more: as written
  // rank 3 would look last everywhere; aligned, rank 1 (node a) is.
  std::vector<BucketSync> all = Records(4, 5, 1, 0.03, 40.0, {2, 3});
  std::vector<BucketSync> a, b;
  for (const BucketSync& r : all) (r.rank < 2 ? a : b).push_back(r);
  BucketArrivals got = FindBucketArrivals({&a, &b}, 0);
  EXPECT_TRUE(got.aligned);
  EXPECT_EQ(got.last_in.at(1), 10u);
  EXPECT_NEAR(got.others_wait_s.at(1), 10 * 0.03, 1e-9);
  // one file's records compared as written: node b's ranks look 40 s late
  BucketArrivals raw = FindBucketArrivals({&all}, 0);
  EXPECT_EQ(raw.last_in[2] + raw.last_in[3], 10u);
  EXPECT_EQ(raw.last_in.count(1), 0u);
}

TEST(BucketArrivals, IncompleteBucketsAndOneRankAreLeftOut) {
  std::vector<BucketSync> records = Records(3, 4, 0, 0.02);
  records.erase(records.begin() + 4);  // step 0, bucket 1, rank 1
  BucketArrivals got = FindBucketArrivals({&records}, 0);
  EXPECT_EQ(got.buckets, 7u);
  EXPECT_EQ(got.last_in.at(0), 7u);
  std::vector<BucketSync> one = Records(1, 4, 0, 0.02);
  EXPECT_EQ(FindBucketArrivals({&one}, 0).buckets, 0u);
  EXPECT_EQ(FindBucketArrivals({nullptr}, 0).buckets, 0u);
}

}  // namespace
}  // namespace stallscope
