// plan loader: the usual start (half the cores as workers, prefetch 4), the
// queue's memory and how it is cut to fit.
#include "plan/loader_plan.h"

#include <gtest/gtest.h>

#include <limits>

namespace stallscope {
namespace {

constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;

TEST(LoaderPlan, HalfTheCoresPrefetchFourWhenItFits) {
  LoaderPlanInput in{96 * kMiB, 64, 16, 64 * kGiB, 1};
  Result<LoaderPlan> plan = PlanLoader(in);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->num_workers, 8);
  EXPECT_EQ(plan->prefetch_factor, 4);
  EXPECT_TRUE(plan->persistent_workers);
  EXPECT_TRUE(plan->pin_memory);
  EXPECT_EQ(plan->queue_bytes, 8 * 4 * 96 * kMiB);
  EXPECT_EQ(plan->queue_budget_bytes, 32 * kGiB);
  EXPECT_TRUE(plan->fits);
  EXPECT_TRUE(plan->warnings.empty());
  EXPECT_EQ(DataLoaderLine(*plan, in),
            "DataLoader(dataset, batch_size=64, num_workers=8, prefetch_factor=4, "
            "persistent_workers=True, pin_memory=True)");
}

TEST(LoaderPlan, WorkersAreSharedByTheGpuProcesses) {
  Result<LoaderPlan> plan = PlanLoader({10 * kMiB, std::nullopt, 64, 512 * kGiB, 8});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->num_workers, 4);
  EXPECT_EQ(plan->queue_bytes, 4ull * 4 * 10 * kMiB * 8);  // x the 8 processes
  Result<LoaderPlan> few = PlanLoader({10 * kMiB, std::nullopt, 2, 512 * kGiB, 4});
  ASSERT_TRUE(few.ok());
  EXPECT_EQ(few->num_workers, 1);  // never 0: loading in the training loop
}

TEST(LoaderPlan, CutsPrefetchThenWorkersToFit) {
  // 8 workers x 4 x 1 GiB = 32 GiB against a budget of 8 GiB (half of 16).
  Result<LoaderPlan> plan = PlanLoader({kGiB, std::nullopt, 16, 16 * kGiB, 1});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->suggested_workers, 8);
  EXPECT_EQ(plan->suggested_queue_bytes, 32 * kGiB);
  EXPECT_EQ(plan->prefetch_factor, 2);
  EXPECT_EQ(plan->num_workers, 4);
  EXPECT_EQ(plan->queue_bytes, 8 * kGiB);
  EXPECT_TRUE(plan->fits);
  ASSERT_EQ(plan->warnings.size(), 1u);
  EXPECT_NE(plan->warnings[0].find("32.0 GiB"), std::string::npos) << plan->warnings[0];
}

TEST(LoaderPlan, WarnsWhenEvenOneWorkerDoesNotFit) {
  Result<LoaderPlan> plan = PlanLoader({10 * kGiB, std::nullopt, 16, 8 * kGiB, 1});
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->fits);
  EXPECT_EQ(plan->num_workers, 1);
  EXPECT_EQ(plan->prefetch_factor, 2);
  ASSERT_EQ(plan->warnings.size(), 2u);
  EXPECT_NE(plan->warnings[1].find("even 1 worker"), std::string::npos);
}

TEST(LoaderPlan, UnknownBatchBytesIsSaidNotGuessed) {
  Result<LoaderPlan> plan = PlanLoader({0, std::nullopt, 8, kGiB, 1});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->num_workers, 4);
  EXPECT_EQ(plan->queue_bytes, 0u);
  ASSERT_EQ(plan->warnings.size(), 1u);
  EXPECT_NE(plan->warnings[0].find("--batch-bytes"), std::string::npos);
}

TEST(LoaderPlan, BadInputNamesTheFlag) {
  EXPECT_NE(PlanLoader({kMiB, std::nullopt, 0, kGiB, 1}).status().message().find("--cores"),
            std::string::npos);
  EXPECT_NE(PlanLoader({kMiB, std::nullopt, 4, kGiB, 0}).status().message().find("--gpus"),
            std::string::npos);
}

TEST(LoaderPlan, QueueBytesSaturates) {
  EXPECT_EQ(QueueBytes(1000, 1000, std::numeric_limits<uint64_t>::max() / 10, 8),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(QueueBytes(2, 3, 5, 7), 210u);
}

}  // namespace
}  // namespace stallscope
