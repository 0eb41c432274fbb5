// bench h2d: the pure parts (sizes, arithmetic, NUMA choice, verdict, sysfs
// parsing) and the whole measuring path over the fake CUDA runtime
// (tests/fake_cudart), loaded through the same dlopen path as libcudart.
#include "bench/cuda_h2d.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "bench/cuda_h2d_run.h"
#include "bench/cuda_runtime.h"
#include "core/file.h"

namespace stallscope {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

TEST(H2d, SizesGrowByFourUpToTheMax) {
  Result<std::vector<uint64_t>> sizes = H2dSizes(kMiB, 1024 * kMiB);
  ASSERT_TRUE(sizes.ok());
  EXPECT_EQ(*sizes,
            (std::vector<uint64_t>{kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB, 256 * kMiB, 1024 * kMiB}));
  EXPECT_EQ(*H2dSizes(kMiB, 3 * kMiB), (std::vector<uint64_t>{kMiB, 3 * kMiB}));
  EXPECT_EQ(*H2dSizes(kMiB, kMiB), (std::vector<uint64_t>{kMiB}));
  EXPECT_EQ(H2dSizes(~0ull / 2, ~0ull)->back(), ~0ull);  // no overflow
  EXPECT_NE(H2dSizes(0, kMiB).status().message().find("--min-size"), std::string::npos);
  EXPECT_NE(H2dSizes(2 * kMiB, kMiB).status().message().find("--max-size"), std::string::npos);
}

TEST(H2d, CopiesAndBandwidth) {
  EXPECT_EQ(CopiesFor(kMiB, 64 * kMiB, 5), 64);
  EXPECT_EQ(CopiesFor(1024 * kMiB, 64 * kMiB, 5), 5);
  EXPECT_DOUBLE_EQ(BytesPerSecond(1000, 10, 0.5), 20000);
  EXPECT_EQ(BytesPerSecond(1000, 10, 0), 0);
}

TEST(H2d, NumaChoice) {
  NumaPlacement p = ChooseNumaNodes(1, {0, 1});
  EXPECT_EQ(p.local, 1);
  EXPECT_EQ(p.remote, 0);
  p = ChooseNumaNodes(std::nullopt, {0, 1});  // numa_node -1: first node
  EXPECT_EQ(p.local, 0);
  EXPECT_EQ(p.remote, 1);
  p = ChooseNumaNodes(0, {0});
  EXPECT_EQ(p.local, 0);
  EXPECT_FALSE(p.remote.has_value());
  p = ChooseNumaNodes(3, {0, 1});  // a node without memory
  EXPECT_EQ(p.local, 0);
  EXPECT_FALSE(ChooseNumaNodes(0, {}).local.has_value());
}

H2dSample Sample(CopyDirection dir, HostMemory memory, bool local, double gbps) {
  H2dSample s;
  s.size_bytes = 1024 * kMiB;
  s.direction = dir;
  s.memory = memory;
  s.local = local;
  s.numa_node = local ? 0 : 1;
  s.bytes_per_second = gbps * 1e9;
  return s;
}

TEST(H2d, VerdictSaysWhatPinnedAndNumaMean) {
  auto h2d = CopyDirection::kHostToDevice, d2h = CopyDirection::kDeviceToHost;
  std::vector<H2dSample> samples = {
      Sample(h2d, HostMemory::kPinned, true, 50), Sample(h2d, HostMemory::kPageable, true, 20),
      Sample(d2h, HostMemory::kPinned, true, 50), Sample(d2h, HostMemory::kPageable, true, 25),
      Sample(h2d, HostMemory::kPinned, false, 30)};
  H2dVerdict v = JudgeH2d(samples);
  EXPECT_DOUBLE_EQ(*v.pinned_over_pageable_h2d, 2.5);
  EXPECT_DOUBLE_EQ(*v.pinned_over_pageable_d2h, 2.0);
  EXPECT_DOUBLE_EQ(*v.remote_over_local_h2d, 0.6);
  ASSERT_EQ(v.lines.size(), 2u);
  EXPECT_NE(v.lines[0].find("2.5x"), std::string::npos) << v.lines[0];
  EXPECT_NE(v.lines[0].find("pin_memory=True"), std::string::npos);
  EXPECT_NE(v.lines[1].find("numactl --cpunodebind=0 --membind=0"), std::string::npos)
      << v.lines[1];

  samples[1].bytes_per_second = 48e9;  // pageable as fast: little to gain
  samples[4].bytes_per_second = 49e9;
  v = JudgeH2d(samples);
  EXPECT_NE(v.lines[0].find("as fast as pinned"), std::string::npos) << v.lines[0];
  EXPECT_NE(v.lines[1].find("optional"), std::string::npos) << v.lines[1];
  EXPECT_TRUE(JudgeH2d({}).lines.empty());
}

TEST(H2d, PinnedCopiesAgainstTheTrainedLink) {
  std::vector<H2dSample> samples = {
      Sample(CopyDirection::kHostToDevice, HostMemory::kPinned, true, 13),
      Sample(CopyDirection::kHostToDevice, HostMemory::kPageable, true, 9)};
  PcieLink link;
  link.pci_address = "0000:17:00.0";
  link.current = {16.0, 8};  // x8 Gen4 trained, of x16 Gen4 on both ends
  link.max = {16.0, 16};
  link.port_address = "0000:16:01.0";
  link.port_max = {16.0, 16};
  // x8 at 16 GT/s with 128b/130b: 8 x 16e9 x 128/130 / 8 bits = 15.75 GB/s.
  ASSERT_NEAR(*PcieCeilingBytesPerSecond(link.current), 15.75e9, 0.01e9);
  H2dVerdict v;
  JudgeAgainstLink(link, samples, v);
  ASSERT_TRUE(v.pinned_h2d_over_link_ceiling.has_value());
  EXPECT_NEAR(*v.pinned_h2d_over_link_ceiling, 13 / 15.75, 1e-3);
  ASSERT_EQ(v.lines.size(), 1u);
  EXPECT_NE(v.lines[0].find("83% of its PCIe link"), std::string::npos) << v.lines[0];
  EXPECT_NE(v.lines[0].find("trained below"), std::string::npos) << v.lines[0];
  EXPECT_NE(v.lines[0].find("io.pcie_degraded"), std::string::npos) << v.lines[0];
  EXPECT_NE(v.lines[0].find("lspci -vv -s 0000:17:00.0"), std::string::npos) << v.lines[0];

  // A link at its full width: the share, and no blame on the link.
  link.current = {16.0, 16};
  H2dVerdict full;
  JudgeAgainstLink(link, samples, full);
  EXPECT_NEAR(*full.pinned_h2d_over_link_ceiling, 13 / 31.5, 1e-3);
  ASSERT_EQ(full.lines.size(), 1u);
  EXPECT_EQ(full.lines[0].find("trained below"), std::string::npos) << full.lines[0];

  // No pinned h2d sample, or no speed figure: nothing to say.
  H2dVerdict none;
  JudgeAgainstLink(link, {samples[1]}, none);
  link.current.speed_gts.reset();
  JudgeAgainstLink(link, samples, none);
  EXPECT_FALSE(none.pinned_h2d_over_link_ceiling.has_value());
  EXPECT_TRUE(none.lines.empty());
}

TEST(H2d, ParsesSysfsText) {
  EXPECT_EQ(*ParseNodeList("0-1,3\n"), (std::vector<int>{0, 1, 3}));
  EXPECT_TRUE(ParseNodeList("")->empty());
  for (const char* bad : {"1-0", "a", "0-5000", "0,,1", "-1", "0-"})
    EXPECT_FALSE(ParseNodeList(bad).has_value()) << bad;
  EXPECT_EQ(CudaBusIdToSysfs("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(CudaBusIdToSysfs("0000:3B:00.0"), "0000:3b:00.0");
  for (const char* bad :
       {"", "3B:00.0", "0000:3B:00", "0000:3G:00.0", "00010000:3B:00.0", "0000:3B:00.0/../x"})
    EXPECT_FALSE(CudaBusIdToSysfs(bad).has_value()) << bad;
}

std::string MakeTree() {
  std::string dir = ::testing::TempDir() + "h2d_sysfs_XXXXXX";
  EXPECT_NE(::mkdtemp(dir.data()), nullptr);
  auto write = [&](const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(dir + path).parent_path());
    std::ofstream(dir + path) << text;
  };
  write("/sys/bus/pci/devices/0000:3b:00.0/numa_node", "1\n");
  write("/sys/bus/pci/devices/0000:af:00.0/numa_node", "-1\n");
  write("/sys/devices/system/node/has_memory", "0-1\n");
  return dir;
}

TEST(H2d, ReadsTheGpuNodeFromSysfs) {
  std::string dir = MakeTree();
  Root root(dir);
  EXPECT_EQ(ReadPciNumaNode(root, "00000000:3B:00.0"), 1);
  EXPECT_FALSE(ReadPciNumaNode(root, "0000:AF:00.0").has_value());  // -1: no node
  EXPECT_FALSE(ReadPciNumaNode(root, "0000:01:00.0").has_value());  // no such device
  EXPECT_EQ(ReadMemoryNodes(root), (std::vector<int>{0, 1}));
  EXPECT_TRUE(ReadMemoryNodes(Root(dir + "/nonexistent")).empty());
  std::filesystem::remove_all(dir);
}

TEST(CudaRuntime, MissingLibraryAndMissingSymbolsAreStatuses) {
  Result<std::unique_ptr<CudaRuntime>> none = CudaRuntime::LoadFrom("/nonexistent/libcudart.so");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("dlopen"), std::string::npos);
  Result<std::unique_ptr<CudaRuntime>> libm = CudaRuntime::LoadFrom("libm.so.6");
  ASSERT_FALSE(libm.ok());
  EXPECT_NE(libm.status().message().find("missing cudaGetDeviceCount"), std::string::npos)
      << libm.status().message();
}

class FakeCudart : public ::testing::Test {
 protected:
  void SetUp() override {
    ::unsetenv("FAKE_CUDART_DEVICES");
    ::unsetenv("FAKE_CUDART_FAIL_MALLOC");
    Result<std::unique_ptr<CudaRuntime>> loaded = CudaRuntime::LoadFrom(STALLSCOPE_FAKE_CUDART);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    cuda_ = std::move(*loaded);
    options_.min_size_bytes = 64 << 10;
    options_.max_size_bytes = 1 * kMiB;
    options_.min_bytes_per_point = 4 * kMiB;
  }
  void TearDown() override {
    ::unsetenv("FAKE_CUDART_DEVICES");
    ::unsetenv("FAKE_CUDART_FAIL_MALLOC");
  }
  std::unique_ptr<CudaRuntime> cuda_;
  H2dOptions options_;
};

TEST_F(FakeCudart, MeasuresEveryPointOnEveryGpu) {
  ::setenv("FAKE_CUDART_DEVICES", "2", 1);
  Result<H2dResult> result = RunH2dBench(*cuda_, options_);
  ASSERT_TRUE(result.ok()) << result.status().message();
  EXPECT_EQ(result->runtime_version, "12.4");
  EXPECT_EQ(result->sizes, (std::vector<uint64_t>{64 << 10, 256 << 10, kMiB}));
  ASSERT_EQ(result->gpus.size(), 2u);
  size_t nodes = ReadMemoryNodes(Root("/")).size() >= 2 ? 2 : 1;
  for (const H2dGpu& gpu : result->gpus) {
    EXPECT_EQ(gpu.name, "stallscope fake GPU");
    EXPECT_EQ(gpu.pci_bus_id, "00000000:3B:00.0");
    // sizes x directions x (pinned, pageable) x nodes
    ASSERT_EQ(gpu.samples.size(), 3 * 2 * 2 * nodes);
    for (const H2dSample& s : gpu.samples) {
      EXPECT_GT(s.bytes_per_second, 0);
      EXPECT_GE(s.copies, 5);
      EXPECT_NEAR(s.bytes_per_second, BytesPerSecond(s.size_bytes, s.copies, s.seconds), 1);
    }
    EXPECT_TRUE(gpu.verdict.pinned_over_pageable_h2d.has_value());
    EXPECT_FALSE(gpu.verdict.lines.empty());
  }
  options_.device = 1;
  result = RunH2dBench(*cuda_, options_);
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->gpus.size(), 1u);
  EXPECT_EQ(result->gpus[0].index, 1);
  options_.device = 2;
  EXPECT_NE(RunH2dBench(*cuda_, options_).status().message().find("--gpu 2"), std::string::npos);
}

TEST_F(FakeCudart, NoDeviceIsUnavailableWithCudasWords) {
  ::setenv("FAKE_CUDART_DEVICES", "0", 1);
  Result<H2dResult> result = RunH2dBench(*cuda_, options_);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(result.status().message().find("no CUDA GPU found"), std::string::npos);
  EXPECT_NE(result.status().message().find("no CUDA-capable device is detected (100)"),
            std::string::npos)
      << result.status().message();
}

TEST_F(FakeCudart, DeviceAllocationFailureIsANoteOnThatGpu) {
  ::setenv("FAKE_CUDART_FAIL_MALLOC", "1", 1);
  Result<H2dResult> result = RunH2dBench(*cuda_, options_);
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->gpus.size(), 1u);
  EXPECT_TRUE(result->gpus[0].samples.empty());
  ASSERT_FALSE(result->gpus[0].notes.empty());
  EXPECT_NE(result->gpus[0].notes.back().find("cudaMalloc: out of memory"), std::string::npos);
}

}  // namespace
}  // namespace stallscope
