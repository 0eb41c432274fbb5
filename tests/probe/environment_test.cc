#include "probe/environment.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/file.h"

namespace stallscope {
namespace {

const std::string kFixtures = STALLSCOPE_FIXTURES;

std::vector<std::string> Names(const TrainingEnvironment& env) {
  std::vector<std::string> names;
  for (const EnvironmentVariable& variable : env.variables) names.push_back(variable.name);
  return names;
}

TEST(ParseEnviron, TorchrunWorker) {
  Result<TrainingEnvironment> env = ReadProcessEnvironment(Root(kFixtures + "/proc_tree"), 100);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(env->source, kFixtures + "/proc_tree/proc/100/environ");
  // Sorted by name; PATH, HOME, the AWS key, TORCH (no underscore), NCCL_ (no
  // name after the prefix) and OMPI_COMM_WORLD_NODE_RANK are not collected.
  EXPECT_EQ(Names(*env),
            (std::vector<std::string>{"CUDA_VISIBLE_DEVICES", "GROUP_RANK", "LOCAL_RANK",
                                      "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                                      "NCCL_DEBUG", "NCCL_SOCKET_IFNAME", "OMP_NUM_THREADS",
                                      "PYTORCH_CUDA_ALLOC_CONF", "RANK", "TORCHELASTIC_RUN_ID",
                                      "TORCH_NCCL_ASYNC_ERROR_HANDLING", "WORLD_SIZE"}));
  EXPECT_EQ(env->Get("NCCL_DEBUG"), "INFO");  // the first of two, as getenv() sees it
  EXPECT_EQ(env->Get("PYTORCH_CUDA_ALLOC_CONF"), "expandable_segments:True");
  EXPECT_EQ(env->Get("CUDA_VISIBLE_DEVICES"), "0,1,2,3");
  EXPECT_FALSE(env->Get("AWS_SECRET_ACCESS_KEY").has_value());
  EXPECT_FALSE(env->Get("HOME").has_value());
  EXPECT_EQ(env->Rank(), 3);
  EXPECT_EQ(env->LocalRank(), 1);
  EXPECT_EQ(env->WorldSize(), 8);
}

TEST(ParseEnviron, FallsBackToSlurmThenOpenMpi) {
  using namespace std::string_literals;
  Result<TrainingEnvironment> slurm = ParseEnviron(
      "SLURM_PROCID=5\0SLURM_LOCALID=1\0SLURM_NTASKS=16\0OMPI_COMM_WORLD_RANK=9\0"s, "e");
  ASSERT_TRUE(slurm.ok());
  EXPECT_EQ(slurm->Rank(), 5);
  EXPECT_EQ(slurm->LocalRank(), 1);
  EXPECT_EQ(slurm->WorldSize(), 16);

  Result<TrainingEnvironment> ompi = ParseEnviron(
      "OMPI_COMM_WORLD_RANK=9\0OMPI_COMM_WORLD_SIZE=12\0OMPI_COMM_WORLD_LOCAL_RANK=3"s, "e");
  ASSERT_TRUE(ompi.ok());
  EXPECT_EQ(ompi->Rank(), 9);
  EXPECT_EQ(ompi->LocalRank(), 3);  // the last entry has no trailing NUL
  EXPECT_EQ(ompi->WorldSize(), 12);

  Result<TrainingEnvironment> none = ParseEnviron("PATH=/bin\0NOEQUALS\0=x\0"s, "e");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->variables.empty());
  EXPECT_FALSE(none->Rank().has_value());
  EXPECT_TRUE(ParseEnviron("", "e")->variables.empty());
}

TEST(ParseEnviron, NonIntegerRankNamesEntry) {
  using namespace std::string_literals;
  Result<TrainingEnvironment> env =
      ParseEnviron("PATH=/bin\0MASTER_PORT=29500\0RANK=abc\0"s, "/proc/7/environ");
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.status().code(), Status::Code::kParseError);
  EXPECT_EQ(env.status().message(), "/proc/7/environ:3: RANK is not a non-negative integer: 'abc'");
  EXPECT_FALSE(ParseEnviron("WORLD_SIZE=-1"s, "e").ok());
  EXPECT_FALSE(ParseEnviron("SLURM_NTASKS="s, "e").ok());
}

TEST(ReadCurrentEnvironment, SeesSetenv) {
  ASSERT_EQ(::setenv("NCCL_STALLSCOPE_TEST", "on", 1), 0);
  ASSERT_EQ(::setenv("STALLSCOPE_NOT_COLLECTED", "x", 1), 0);
  Result<TrainingEnvironment> env = ReadCurrentEnvironment();
  ::unsetenv("NCCL_STALLSCOPE_TEST");
  ::unsetenv("STALLSCOPE_NOT_COLLECTED");
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(env->source, "environ");
  EXPECT_EQ(env->Get("NCCL_STALLSCOPE_TEST"), "on");
  EXPECT_FALSE(env->Get("STALLSCOPE_NOT_COLLECTED").has_value());
}

TEST(ReadProcessEnvironment, LiveSelfMatchesEnviron) {
  ASSERT_EQ(::setenv("GLOO_SOCKET_IFNAME", "eth0", 1), 0);  // not in /proc: set after exec
  Result<TrainingEnvironment> live = ReadProcessEnvironment(Root("/"), ::getpid());
  ::unsetenv("GLOO_SOCKET_IFNAME");
  ASSERT_TRUE(live.ok()) << live.status().ToString();
  EXPECT_FALSE(live->Get("GLOO_SOCKET_IFNAME").has_value());
  EXPECT_TRUE(ReadProcessEnvironment(Root("/"), 0x7ffffff0).status().IsNotFound());
}

TEST(IsTrainingVariable, Names) {
  EXPECT_TRUE(IsTrainingVariable("NCCL_IB_HCA"));
  EXPECT_TRUE(IsTrainingVariable("TORCHELASTIC_RESTART_COUNT"));
  EXPECT_TRUE(IsTrainingVariable("MKL_NUM_THREADS"));
  EXPECT_TRUE(IsTrainingVariable("CUDA_DEVICE_ORDER"));
  EXPECT_FALSE(IsTrainingVariable("CUDA_HOME"));
  EXPECT_FALSE(IsTrainingVariable("OMPI_COMM_WORLD_NODE_RANK"));
  EXPECT_FALSE(IsTrainingVariable("SLURM_JOB_ID"));
  EXPECT_FALSE(IsTrainingVariable("rank"));
  EXPECT_FALSE(IsTrainingVariable(""));
}

}  // namespace
}  // namespace stallscope
