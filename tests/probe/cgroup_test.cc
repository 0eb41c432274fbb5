#include "probe/cgroup.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/file.h"
#include "probe/meminfo.h"

namespace stallscope {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kGiB = 1024 * kMiB;

bool HasEvidence(const ContainerInfo& info, std::string_view clue) {
  return std::any_of(info.evidence.begin(), info.evidence.end(),
                     [&](const std::string& e) { return e.find(clue) != std::string::npos; });
}

TEST(CgroupTest, LiveCaptureIsHybridV1WithOwnPath) {
  // This machine: cgroup v1 memory controller next to an empty v2 hierarchy,
  // the process in a per-command cgroup that exists under the mount.
  Result<CgroupMemory> memory = ReadCgroupMemory(Root(STALLSCOPE_FIXTURES "/live_debian12"));
  ASSERT_TRUE(memory.ok()) << memory.status().ToString();
  EXPECT_EQ(memory->version, CgroupVersion::kV1);
  EXPECT_EQ(memory->cgroup_path, "/process_api/8093f5261630edde4df93ce7a58e6a36");
  EXPECT_EQ(memory->directory,
            "/sys/fs/cgroup/memory/process_api/8093f5261630edde4df93ce7a58e6a36");
  EXPECT_FALSE(memory->limit_bytes.has_value());  // 9223372036854771712
  EXPECT_EQ(memory->usage_bytes, 9277440u);
  EXPECT_EQ(memory->peak_bytes, 153735168u);
  EXPECT_EQ(memory->inactive_file_bytes, 1925120u);
  EXPECT_EQ(memory->working_set_bytes, 9277440u - 1925120u);
  EXPECT_EQ(memory->anon_bytes, 2301952u);
  EXPECT_EQ(memory->file_bytes, 5808128u);
  EXPECT_EQ(memory->swap_usage_bytes, 0u);
  EXPECT_FALSE(memory->swap_limit_bytes.has_value());
  EXPECT_EQ(memory->oom_kill_count, 0u);
  EXPECT_FALSE(memory->under_oom);

  ContainerInfo info = ReadContainerInfo(Root(STALLSCOPE_FIXTURES "/live_debian12"));
  EXPECT_TRUE(info.in_container);
  EXPECT_EQ(info.runtime, "docker");
  EXPECT_TRUE(HasEvidence(info, "/.dockerenv exists"));
}

TEST(CgroupTest, ContainerV2AtMountRootNearItsLimit) {
  Root root(STALLSCOPE_FIXTURES "/container_v2");
  Result<CgroupMemory> memory = ReadCgroupMemory(root);
  ASSERT_TRUE(memory.ok()) << memory.status().ToString();
  EXPECT_EQ(memory->version, CgroupVersion::kV2);
  EXPECT_EQ(memory->cgroup_path, "/");
  EXPECT_EQ(memory->directory, "/sys/fs/cgroup");
  EXPECT_EQ(memory->limit_bytes, 4 * kGiB);
  EXPECT_FALSE(memory->high_bytes.has_value());
  EXPECT_EQ(memory->usage_bytes, 4123000832u);
  EXPECT_EQ(memory->peak_bytes, 4 * kGiB);
  EXPECT_EQ(memory->anon_bytes, 3758096384u);
  EXPECT_EQ(memory->inactive_file_bytes, 200 * kMiB);
  EXPECT_EQ(memory->shmem_bytes, 64 * kMiB);
  EXPECT_EQ(memory->working_set_bytes, 4123000832u - 200 * kMiB);
  EXPECT_EQ(memory->swap_usage_bytes, 0u);
  EXPECT_EQ(memory->swap_limit_bytes, 0u);  // --memory-swap equal to --memory
  EXPECT_EQ(memory->oom_events, 3u);
  EXPECT_EQ(memory->oom_kill_count, 1u);
  EXPECT_EQ(memory->max_events, 1532u);

  // The host has 200 GiB available; the job has what its limit leaves.
  Result<MemInfo> host = ReadMemInfo(root);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_EQ(host->available_bytes, 200 * kGiB);
  EXPECT_EQ(EffectiveAvailableBytes(*host, *memory), 4 * kGiB - (4123000832u - 200 * kMiB));

  ContainerInfo info = ReadContainerInfo(root);
  EXPECT_TRUE(info.in_container);
  EXPECT_EQ(info.runtime, "docker");
  EXPECT_EQ(info.evidence, std::vector<std::string>{"/.dockerenv exists"});
}

TEST(CgroupTest, ContainerV1KubernetesPathFallsBackToMountRoot) {
  Root root(STALLSCOPE_FIXTURES "/container_v1");
  Result<CgroupMemory> memory = ReadCgroupMemory(root);
  ASSERT_TRUE(memory.ok()) << memory.status().ToString();
  EXPECT_EQ(memory->version, CgroupVersion::kV1);
  EXPECT_EQ(memory->cgroup_path.rfind("/kubepods/burstable/pod5f8e2a4c", 0), 0u);
  EXPECT_EQ(memory->directory, "/sys/fs/cgroup/memory");  // the path is the host's
  EXPECT_EQ(memory->limit_bytes, 2 * kGiB);
  EXPECT_EQ(memory->usage_bytes, 1900000000u);
  EXPECT_EQ(memory->working_set_bytes, 1600000000u);
  EXPECT_EQ(memory->anon_bytes, 1450000000u);
  EXPECT_FALSE(memory->swap_usage_bytes.has_value());  // no swap accounting
  EXPECT_FALSE(memory->swap_limit_bytes.has_value());
  EXPECT_EQ(memory->oom_kill_count, 1u);
  EXPECT_EQ(memory->max_events, 27u);
  EXPECT_FALSE(memory->oom_events.has_value());

  // Headroom is 2 GiB - 1.6 GB = 547483648, but the host has only 400 MiB.
  Result<MemInfo> host = ReadMemInfo(root);
  ASSERT_TRUE(host.ok());
  EXPECT_EQ(EffectiveAvailableBytes(*host, *memory), 400 * kMiB);

  ContainerInfo info = ReadContainerInfo(root);
  EXPECT_TRUE(info.in_container);
  EXPECT_EQ(info.runtime, "kubernetes");
  EXPECT_TRUE(HasEvidence(info, "/proc/self/cgroup: 12:memory:/kubepods/burstable/"));
}

TEST(CgroupTest, HostV2TakesTheTightestLimitOfTheAncestors) {
  Root root(STALLSCOPE_FIXTURES "/swap_host");
  Result<CgroupMemory> memory = ReadCgroupMemory(root);
  ASSERT_TRUE(memory.ok()) << memory.status().ToString();
  EXPECT_EQ(memory->directory, "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope");
  EXPECT_EQ(memory->limit_bytes, 16 * kGiB);  // from user.slice; the scope says "max"
  EXPECT_EQ(memory->swap_usage_bytes, 3 * kGiB);
  EXPECT_FALSE(memory->swap_limit_bytes.has_value());
  EXPECT_EQ(memory->working_set_bytes, 14 * kGiB - 768 * kMiB);
  EXPECT_EQ(memory->oom_kill_count, 0u);

  ContainerInfo info = ReadContainerInfo(root);
  EXPECT_FALSE(info.in_container);
  EXPECT_EQ(info.runtime, "");
  EXPECT_TRUE(info.evidence.empty());
}

TEST(CgroupTest, NoMemoryCgroupIsNotFound) {
  // A v2 host's root cgroup has no memory.current.
  Result<CgroupMemory> memory = ReadCgroupMemory(Root(STALLSCOPE_FIXTURES "/swap_host"), "1");
  EXPECT_FALSE(memory.ok());  // no /proc/1/cgroup in the fixture
  EXPECT_TRUE(memory.status().IsNotFound());
}

TEST(CgroupTest, ParsesProcCgroupLines) {
  Result<std::vector<CgroupEntry>> entries =
      ParseProcCgroup("4:memory:/a/b\n2:cpu,cpuacct:/\n1:name=systemd:/x:y\n0::/\n", "cgroup");
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), 4u);
  EXPECT_EQ((*entries)[0].controllers, std::vector<std::string>{"memory"});
  EXPECT_EQ((*entries)[1].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
  EXPECT_EQ((*entries)[2].path, "/x:y");
  EXPECT_EQ((*entries)[3].hierarchy_id, 0u);
  EXPECT_TRUE((*entries)[3].controllers.empty());
}

TEST(CgroupTest, LimitValues) {
  EXPECT_FALSE(ParseCgroupLimit("max\n", "memory.max")->has_value());
  EXPECT_FALSE(ParseCgroupLimit("9223372036854771712\n", "l")->has_value());
  EXPECT_FALSE(ParseCgroupLimit("9223372036854710272\n", "l")->has_value());  // 64 KiB pages
  EXPECT_EQ(*ParseCgroupLimit("4294967296\n", "l").value(), 4 * kGiB);
  Result<std::optional<uint64_t>> bad = ParseCgroupLimit("lots\n", "/sys/fs/cgroup/memory.max");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "/sys/fs/cgroup/memory.max:1: expected a number of bytes or 'max'");
}

TEST(CgroupTest, MalformedInputNamesFileAndLine) {
  struct BadInput {
    const char* text;
    const char* message;
  } proc_cases[] = {
      {"0::/\nmemory:/a\n", "/proc/self/cgroup:2: expected 'id:controllers:path'"},
      {"x:memory:/a\n", "/proc/self/cgroup:1: hierarchy id is not a number"},
      {"0::relative\n", "/proc/self/cgroup:1: path does not start with '/'"},
      {"0::", "/proc/self/cgroup:1: path does not start with '/'"},  // truncated
      {"", "/proc/self/cgroup: no cgroup lines"},
  };
  for (const BadInput& bad : proc_cases) {
    auto entries = ParseProcCgroup(bad.text, "/proc/self/cgroup");
    ASSERT_FALSE(entries.ok()) << bad.text;
    EXPECT_EQ(entries.status().code(), Status::Code::kParseError);
    EXPECT_EQ(entries.status().message(), bad.message);
  }
  BadInput counter_cases[] = {
      {"anon 1\nfile\n", "memory.stat:2: expected 'key value'"},
      {"anon 1\nfile 2 3\n", "memory.stat:2: expected 'key value'"},
      {"anon 1\nfile x\n", "memory.stat:2: file: not a number"},
  };
  for (const BadInput& bad : counter_cases) {
    auto counters = ParseCgroupCounters(bad.text, "memory.stat");
    ASSERT_FALSE(counters.ok()) << bad.text;
    EXPECT_EQ(counters.status().message(), bad.message);
  }
}

TEST(ContainerTest, ClassifiesRuntimes) {
  auto entries = [](const char* text) { return *ParseProcCgroup(text, "cgroup"); };
  ContainerHints podman;
  podman.containerenv_exists = true;
  podman.container_variable = "podman";
  EXPECT_EQ(ClassifyContainer(podman).runtime, "podman");
  EXPECT_EQ(ClassifyContainer(podman).evidence.size(), 2u);

  ContainerHints crio;
  crio.cgroups = entries("0::/kubepods.slice/kubepods-pod1.slice/crio-abc.scope\n");
  crio.dockerenv_exists = true;
  EXPECT_EQ(ClassifyContainer(crio).runtime, "kubernetes");

  ContainerHints docker_systemd;
  docker_systemd.cgroups = entries("0::/system.slice/docker-0123abcd.scope\n");
  EXPECT_TRUE(ClassifyContainer(docker_systemd).in_container);
  EXPECT_EQ(ClassifyContainer(docker_systemd).runtime, "docker");

  ContainerHints libpod;
  libpod.cgroups = entries("0::/machine.slice/libpod-0123.scope/container\n");
  EXPECT_EQ(ClassifyContainer(libpod).runtime, "podman");

  // The daemons themselves run on the host, in *.service cgroups.
  ContainerHints daemon;
  daemon.cgroups = entries("0::/system.slice/containerd.service\n");
  EXPECT_FALSE(ClassifyContainer(daemon).in_container);

  ContainerHints nspawn;
  nspawn.container_variable = "systemd-nspawn";
  EXPECT_EQ(ClassifyContainer(nspawn).runtime, "systemd-nspawn");

  EXPECT_FALSE(ClassifyContainer(ContainerHints{}).in_container);
}

TEST(ContainerTest, FindsContainerVariableInEnviron) {
  using namespace std::string_view_literals;
  EXPECT_EQ(FindContainerVariable("PATH=/bin\0container=lxc\0HOME=/"sv), "lxc");
  EXPECT_EQ(FindContainerVariable("PATH=/bin\0container=podman"sv), "podman");
  EXPECT_FALSE(FindContainerVariable("PATH=/bin\0mycontainer=x\0"sv).has_value());
  EXPECT_FALSE(FindContainerVariable(""sv).has_value());
}

}  // namespace
}  // namespace stallscope
