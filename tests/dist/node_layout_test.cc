// A node's place in a multi-node job (dist/node_layout.h): the flags, srun's
// and mpirun's variables, the errors before anything starts, SLURM's host
// lists and --out's %h/%r.
#include "dist/node_layout.h"

#include <gtest/gtest.h>

#include <map>

namespace stallscope {
namespace {

EnvLookup Env(std::map<std::string, std::string> vars) {
  return [vars](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

NodeLayoutFlags Procs(int k) {
  NodeLayoutFlags f;
  f.procs = k;
  return f;
}

TEST(NodeLayout, OneNodeWithoutFlagsKeepsTheFreePort) {
  Result<NodeLayout> l = ResolveNodeLayout(Procs(4), Env({}));
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->nnodes, 1);
  EXPECT_EQ(l->node_rank, 0);
  EXPECT_EQ(l->master_addr, "127.0.0.1");
  EXPECT_EQ(l->master_port, 0);
  EXPECT_EQ(l->world_size(), 4);
  EXPECT_EQ(l->source, "one node");
}

TEST(NodeLayout, FlagsGiveTorchrunsRanks) {
  NodeLayoutFlags f = Procs(8);
  f.nnodes = 4;
  f.node_rank = 2;
  f.master_addr = "node1";
  Result<NodeLayout> l = ResolveNodeLayout(f, Env({}));
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->world_size(), 32);
  EXPECT_EQ(l->first_rank(), 16);
  EXPECT_EQ(l->master_port, kDefaultMasterPort);
  EXPECT_EQ(l->source, "flags");
}

TEST(NodeLayout, SrunGivesWhatTheFlagsLeaveOut) {
  auto env = Env({{"SLURM_STEP_ID", "0"},
                  {"SLURM_NODEID", "3"},
                  {"SLURM_NNODES", "4"},
                  {"SLURM_NTASKS", "4"},
                  {"SLURM_JOB_ID", "991"},
                  {"SLURM_JOB_NODELIST", "gpu[07-09,12]"}});
  Result<NodeLayout> l = ResolveNodeLayout(Procs(8), env);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->node_rank, 3);
  EXPECT_EQ(l->nnodes, 4);
  EXPECT_EQ(l->master_addr, "gpu07");
  EXPECT_EQ(l->master_port, kDefaultMasterPort);
  EXPECT_EQ(l->launcher_job, "991");
  EXPECT_NE(l->source.find("SLURM_NODEID=3"), std::string::npos) << l->source;
  // A flag wins over the variable.
  NodeLayoutFlags f = Procs(8);
  f.master_addr = "10.0.0.5";
  l = ResolveNodeLayout(f, env);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->master_addr, "10.0.0.5");
  EXPECT_EQ(l->source.rfind("flags and srun", 0), 0u) << l->source;
  // The batch script is not a step: its variables place nothing.
  l = ResolveNodeLayout(
      Procs(8),
      Env({{"SLURM_STEP_ID", "4294967294"}, {"SLURM_NODEID", "0"}, {"SLURM_NNODES", "4"}}));
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->nnodes, 1);
}

TEST(NodeLayout, SrunWithSeveralTasksPerNodeIsRefused) {
  Result<NodeLayout> l = ResolveNodeLayout(Procs(8), Env({{"SLURM_STEP_ID", "0"},
                                                          {"SLURM_NODEID", "0"},
                                                          {"SLURM_NNODES", "2"},
                                                          {"SLURM_NTASKS", "16"},
                                                          {"SLURM_JOB_NODELIST", "a,b"}}));
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("--ntasks-per-node=1"), std::string::npos);
}

TEST(NodeLayout, MpirunOneTaskPerNode) {
  NodeLayoutFlags f = Procs(2);
  f.master_addr = "head";
  Result<NodeLayout> l = ResolveNodeLayout(f, Env({{"OMPI_COMM_WORLD_RANK", "1"},
                                                   {"OMPI_COMM_WORLD_SIZE", "3"},
                                                   {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}}));
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->node_rank, 1);
  EXPECT_EQ(l->nnodes, 3);
  EXPECT_EQ(l->first_rank(), 2);
  // Open MPI names no master.
  l = ResolveNodeLayout(Procs(2), Env({{"OMPI_COMM_WORLD_RANK", "1"},
                                       {"OMPI_COMM_WORLD_SIZE", "3"},
                                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "1"}}));
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("Open MPI exports no such variable"), std::string::npos);
  l = ResolveNodeLayout(f, Env({{"OMPI_COMM_WORLD_RANK", "1"},
                                {"OMPI_COMM_WORLD_SIZE", "4"},
                                {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}));
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("OMPI_COMM_WORLD_LOCAL_SIZE=2"), std::string::npos);
}

TEST(NodeLayout, BadCombinationsNameTheFlag) {
  struct Case {
    std::optional<int> nnodes, node_rank, port;
    std::string master, words;
  } cases[] = {
      {2, std::nullopt, std::nullopt, "m", "needs --node-rank"},
      {2, 2, std::nullopt, "m", "--node-rank 2: must be below --nnodes 2"},
      {2, -1, std::nullopt, "m", "--node-rank -1"},
      {0, std::nullopt, std::nullopt, "", "--nnodes 0"},
      {2, 1, std::nullopt, "", "needs --master-addr"},
      {1, 0, 65536, "m", "--master-port 65536"},
      {1, 0, 0, "m", "--master-port 0"},
  };
  for (const Case& c : cases) {
    NodeLayoutFlags f = Procs(2);
    f.nnodes = c.nnodes;
    f.node_rank = c.node_rank;
    f.master_port = c.port;
    f.master_addr = c.master;
    Result<NodeLayout> l = ResolveNodeLayout(f, Env({}));
    ASSERT_FALSE(l.ok()) << c.words;
    EXPECT_NE(l.status().message().find(c.words), std::string::npos) << l.status().message();
  }
  EXPECT_FALSE(ResolveNodeLayout(Procs(0), Env({})).ok());
  Result<NodeLayout> bad = ResolveNodeLayout(
      Procs(1), Env({{"SLURM_STEP_ID", "0"}, {"SLURM_NODEID", "x"}, {"SLURM_NNODES", "2"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("SLURM_NODEID=x"), std::string::npos);
}

TEST(SlurmHostList, ExpandsRangesListsAndPadding) {
  auto hosts = ExpandSlurmHostList("node[01-03,07],gpu5,rack[1-2]-n[8-9]");
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(*hosts, (std::vector<std::string>{"node01", "node02", "node03", "node07", "gpu5",
                                              "rack1-n8", "rack1-n9", "rack2-n8", "rack2-n9"}));
  hosts = ExpandSlurmHostList("n[098-101]");
  ASSERT_TRUE(hosts.ok());
  EXPECT_EQ(*hosts, (std::vector<std::string>{"n098", "n099", "n100", "n101"}));
  for (const char* bad : {"node[01-03", "node01]", "node[3-1]", "node[a-b]", "node[]", "", ","}) {
    EXPECT_FALSE(ExpandSlurmHostList(bad).ok()) << bad;
  }
  EXPECT_FALSE(ExpandSlurmHostList("n[0-99999999]").ok());
}

TEST(RunFileName, ExpandsHostAndNodeRank) {
  EXPECT_EQ(*ExpandRunFileName("/runs/%h-%r.db", "gpu7", 3), "/runs/gpu7-3.db");
  EXPECT_EQ(*ExpandRunFileName("100%%.db", "h", 0), "100%.db");
  Result<std::string> bad = ExpandRunFileName("a%x.db", "h", 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'%x'"), std::string::npos);
  EXPECT_FALSE(ExpandRunFileName("trailing%", "h", 0).ok());
}

}  // namespace
}  // namespace stallscope
