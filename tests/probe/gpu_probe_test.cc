// GpuProbe against the fake NVML (tests/fake_nvml/fake_nvml.c), loaded
// through the same dlopen path as libnvidia-ml.so.1: values, GPM, the
// fallback without GPM, a GPU lost mid-run, and no library at all.
#include "probe/gpu_probe.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "core/file.h"
#include "probe/nvml_loader.h"

namespace stallscope {
namespace {

class GpuProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("stallscope_gpu_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    unsetenv("FAKE_NVML_SCRIPT");
    std::filesystem::remove_all(dir_);
  }
  void Script(const std::string& text) {
    std::string path = (dir_ / "script").string();
    std::ofstream(path) << text;
    setenv("FAKE_NVML_SCRIPT", path.c_str(), 1);
  }
  std::unique_ptr<GpuProbe> Open() {
    return GpuProbe::Open(Root(dir_.string()), STALLSCOPE_FAKE_NVML);
  }
  std::filesystem::path dir_;
};

constexpr const char* kTwoGpus = R"(# two GPUs, the first with GPM
gpus 2
gpu.0.name NVIDIA H100 80GB HBM3
gpu.0.uuid GPU-aaaaaaaa-0000
gpu.0.bus 00000000:3B:00.0
gpu.0.numa 1
gpu.0.mem_total 85899345920
gpu.0.mem_used 1073741824,2147483648
gpu.0.util 97,95
gpu.0.mem_util 40
gpu.0.sm_clock 1410
gpu.0.sm_clock_max 1980
gpu.0.throttle 0x4
gpu.0.temp 71
gpu.0.power_mw 650000
gpu.0.power_limit_mw 700000
gpu.0.pcie_tx 1200
gpu.0.pcie_rx 2400
gpu.0.ecc_corrected 3
gpu.0.ecc_uncorrected 0
gpu.0.retired 2
gpu.0.remapped 1
gpu.0.procs 4242:1000000000,4343:500000000
gpu.0.gpm 1
gpu.0.gpm.sm_util 10,31.5
gpu.0.gpm.sm_occupancy 12,20
gpu.0.gpm.tensor 5
gpu.0.gpm.dram_bw 7
gpu.0.gpm.pcie_tx 100
gpu.0.gpm.pcie_rx 200
gpu.0.gpm.nvlink_tx 300
gpu.0.gpm.nvlink_rx 400
gpu.1.name NVIDIA A100-SXM4-40GB
gpu.1.uuid GPU-bbbbbbbb-1111
gpu.1.bus 00000000:86:00.0
gpu.1.mem_total 42949672960
gpu.1.mem_used 1000
gpu.1.util 5
gpu.1.gpm 0
)";

TEST_F(GpuProbeTest, LoadsTheLibraryAndReadsEveryValue) {
  Script(kTwoGpus);
  auto probe = Open();
  ASSERT_TRUE(probe->available()) << probe->absent_reason();
  GpuObservation o = probe->Sample();
  ASSERT_EQ(o.gpus.size(), 2u);
  const GpuState& g = o.gpus[0];
  EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.uuid, "GPU-aaaaaaaa-0000");
  EXPECT_EQ(g.pci_bus_id, "00000000:3B:00.0");
  EXPECT_EQ(g.numa_node, 1);
  EXPECT_EQ(g.memory_total_bytes, 85899345920u);
  EXPECT_EQ(g.memory_used_bytes, 1073741824u);
  EXPECT_EQ(g.utilization_gpu_percent, 97);
  EXPECT_EQ(g.utilization_memory_percent, 40);
  EXPECT_EQ(g.sm_clock_mhz, 1410u);
  EXPECT_EQ(g.sm_clock_max_mhz, 1980u);
  // The fake exports only the pre-12.2 throttle-reasons name: the fallback works.
  EXPECT_EQ(g.throttle_reasons, 0x4u);
  EXPECT_EQ(ThrottleReasonNames(*g.throttle_reasons), std::vector<std::string>{"sw_power_cap"});
  EXPECT_EQ(g.temperature_c, 71u);
  EXPECT_DOUBLE_EQ(*g.power_w, 650.0);
  EXPECT_DOUBLE_EQ(*g.power_limit_w, 700.0);
  EXPECT_DOUBLE_EQ(*g.pcie_tx_kib_per_s, 1200);
  EXPECT_DOUBLE_EQ(*g.pcie_rx_kib_per_s, 2400);
  EXPECT_EQ(g.ecc_volatile_corrected, 3u);
  EXPECT_EQ(g.ecc_volatile_uncorrected, 0u);
  EXPECT_EQ(g.retired_pages, 2u);
  EXPECT_EQ(g.remapped_rows, 1u);
  ASSERT_EQ(g.processes.size(), 2u);
  EXPECT_EQ(g.processes[0].pid, 4242);
  EXPECT_EQ(g.processes[0].used_bytes, 1000000000u);
  EXPECT_EQ(g.processes[1].pid, 4343);
  // Unsupported fields stay empty, not zero.
  const GpuState& a100 = o.gpus[1];
  EXPECT_EQ(a100.name, "NVIDIA A100-SXM4-40GB");
  EXPECT_FALSE(a100.sm_clock_mhz.has_value());
  EXPECT_FALSE(a100.temperature_c.has_value());
  EXPECT_FALSE(a100.ecc_volatile_corrected.has_value());
  EXPECT_TRUE(a100.processes.empty());
  // The second sample moves to the next scripted values.
  GpuObservation second = probe->Sample();
  EXPECT_EQ(second.gpus[0].memory_used_bytes, 2147483648u);
  EXPECT_EQ(second.gpus[0].utilization_gpu_percent, 95);
}

TEST_F(GpuProbeTest, GpmNeedsTwoSamplesThenReportsTheMetrics) {
  Script(kTwoGpus);
  auto probe = Open();
  ASSERT_TRUE(probe->available());
  GpuObservation first = probe->Sample();
  EXPECT_FALSE(first.gpus[0].gpm.has_value());
  EXPECT_NE(first.gpus[0].gpm_note.find("two samples"), std::string::npos);
  GpuObservation second = probe->Sample();
  ASSERT_TRUE(second.gpus[0].gpm.has_value()) << second.gpus[0].gpm_note;
  const GpmMetrics& m = *second.gpus[0].gpm;
  EXPECT_DOUBLE_EQ(*m.sm_active_percent, 31.5);  // the value of sample 1, not 0
  EXPECT_DOUBLE_EQ(*m.sm_occupancy_percent, 20);
  EXPECT_DOUBLE_EQ(*m.tensor_active_percent, 5);
  EXPECT_DOUBLE_EQ(*m.dram_bw_percent, 7);
  EXPECT_DOUBLE_EQ(*m.pcie_tx_mib_per_s, 100);
  EXPECT_DOUBLE_EQ(*m.pcie_rx_mib_per_s, 200);
  EXPECT_DOUBLE_EQ(*m.nvlink_tx_mib_per_s, 300);
  EXPECT_DOUBLE_EQ(*m.nvlink_rx_mib_per_s, 400);
}

TEST_F(GpuProbeTest, FallsBackCleanlyWhenGpmIsUnsupported) {
  Script(kTwoGpus);
  auto probe = Open();
  probe->Sample();
  GpuObservation o = probe->Sample();
  const GpuState& a100 = o.gpus[1];
  EXPECT_FALSE(a100.gpm.has_value());
  EXPECT_NE(a100.gpm_note.find("not supported"), std::string::npos) << a100.gpm_note;
  EXPECT_FALSE(a100.lost);
  EXPECT_EQ(a100.utilization_gpu_percent, 5);  // the rest is still read
}

TEST_F(GpuProbeTest, NumaNodeFromSysfsWhenNvmlHasNone) {
  Script("gpus 1\ngpu.0.name G\ngpu.0.bus 00000000:AF:00.0\ngpu.0.mem_total 100\n");
  std::filesystem::create_directories(dir_ / "sys/bus/pci/devices/0000:af:00.0");
  std::ofstream((dir_ / "sys/bus/pci/devices/0000:af:00.0/numa_node").string()) << "3\n";
  auto probe = Open();
  ASSERT_TRUE(probe->available());
  EXPECT_EQ(probe->Sample().gpus[0].numa_node, 3);
}

TEST_F(GpuProbeTest, NumaNodeMinusOneMeansNone) {
  Script("gpus 1\ngpu.0.name G\ngpu.0.bus 00000000:AF:00.0\n");
  std::filesystem::create_directories(dir_ / "sys/bus/pci/devices/0000:af:00.0");
  std::ofstream((dir_ / "sys/bus/pci/devices/0000:af:00.0/numa_node").string()) << "-1\n";
  auto probe = Open();
  EXPECT_FALSE(probe->Sample().gpus[0].numa_node.has_value());
}

TEST_F(GpuProbeTest, GpuLostMidRunIsMarkedAndNamedAndTheOthersGoOn) {
  Script(std::string(kTwoGpus) + "gpu.0.lost_after 1\n");
  auto probe = Open();
  GpuObservation first = probe->Sample();
  EXPECT_FALSE(first.gpus[0].lost);
  EXPECT_EQ(first.gpus[0].utilization_gpu_percent, 97);
  GpuObservation second = probe->Sample();
  ASSERT_EQ(second.gpus.size(), 2u);
  const GpuState& lost = second.gpus[0];
  EXPECT_TRUE(lost.lost);
  EXPECT_EQ(lost.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(lost.uuid, "GPU-aaaaaaaa-0000");
  EXPECT_NE(lost.lost_reason.find("NVML_ERROR_GPU_IS_LOST"), std::string::npos) << lost.lost_reason;
  EXPECT_EQ(lost.utilization_gpu_percent, 0);  // nothing it said is kept
  EXPECT_FALSE(lost.gpm.has_value());
  EXPECT_FALSE(second.gpus[1].lost);
  EXPECT_EQ(second.gpus[1].utilization_gpu_percent, 5);
  GpuObservation third = probe->Sample();
  EXPECT_TRUE(third.gpus[0].lost);  // stays lost; never asked again
}

TEST_F(GpuProbeTest, NoLibraryIsOneLineNotAnError) {
  auto probe = GpuProbe::Open(Root(dir_.string()), (dir_ / "libnvidia-ml.so.1").string());
  EXPECT_FALSE(probe->available());
  EXPECT_EQ(probe->absent_reason().rfind(kNoGpuLine, 0), 0u) << probe->absent_reason();
  GpuObservation o = probe->Sample();
  EXPECT_FALSE(o.available);
  EXPECT_TRUE(o.gpus.empty());
}

TEST_F(GpuProbeTest, DriverNotLoadedOrZeroGpusIsNoGpu) {
  Script("init_error 9\n");
  auto probe = Open();
  EXPECT_FALSE(probe->available());
  EXPECT_NE(probe->absent_reason().find("NVML_ERROR_DRIVER_NOT_LOADED"), std::string::npos)
      << probe->absent_reason();
  Script("gpus 0\n");
  auto none = Open();
  EXPECT_FALSE(none->available());
  EXPECT_NE(none->absent_reason().find("0 GPUs"), std::string::npos) << none->absent_reason();
}

TEST_F(GpuProbeTest, EnvironmentVariableNamesTheLibrary) {
  Script("gpus 1\ngpu.0.name From The Env\n");
  setenv(kNvmlLibraryEnv, STALLSCOPE_FAKE_NVML, 1);
  auto probe = GpuProbe::Open(Root(dir_.string()));
  unsetenv(kNvmlLibraryEnv);
  ASSERT_TRUE(probe->available()) << probe->absent_reason();
  EXPECT_EQ(probe->Sample().gpus[0].name, "From The Env");
}

TEST(GpuProbePure, SysfsPciAddress) {
  EXPECT_EQ(SysfsPciAddress("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(SysfsPciAddress("0001:AF:00.1"), "0001:af:00.1");
}

TEST(GpuProbePure, JobGpusFirst) {
  std::vector<GpuState> gpus(3);
  for (unsigned i = 0; i < 3; ++i) gpus[i].index = i;
  gpus[2].processes = {{77, 100}};
  gpus[1].processes = {{5, 100}};
  std::vector<GpuState> ordered = JobGpusFirst(gpus, {77});
  EXPECT_EQ(ordered[0].index, 2u);
  EXPECT_EQ(ordered[1].index, 0u);
  EXPECT_EQ(ordered[2].index, 1u);
}

TEST(GpuProbePure, ThrottleReasonsDecoded) {
  EXPECT_EQ(ThrottleReasonNames(0x1 | 0x20 | 0x40),
            (std::vector<std::string>{"gpu_idle", "sw_thermal_slowdown", "hw_thermal_slowdown"}));
  EXPECT_EQ(SlowdownReasons(0x1 | 0x2 | 0x4 | 0x100), 0x4u);
}

}  // namespace
}  // namespace stallscope
