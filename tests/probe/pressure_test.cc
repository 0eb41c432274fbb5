#include "probe/pressure.h"

#include <gtest/gtest.h>

#include "core/file.h"

namespace stallscope {
namespace {

TEST(PressureTest, ParsesLiveCapture) {
  Result<HostPressure> host = ReadHostPressure(Root(STALLSCOPE_FIXTURES "/live_debian12"));
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  // tests/fixtures/live_debian12/proc/pressure/*.
  ASSERT_TRUE(host->cpu.present);
  ASSERT_TRUE(host->cpu.some.has_value());
  EXPECT_DOUBLE_EQ(host->cpu.some->avg10_percent, 14.44);
  EXPECT_DOUBLE_EQ(host->cpu.some->avg60_percent, 7.40);
  EXPECT_DOUBLE_EQ(host->cpu.some->avg300_percent, 3.79);
  EXPECT_EQ(host->cpu.some->total_us, 20087156u);
  ASSERT_TRUE(host->io.present);
  ASSERT_TRUE(host->io.full.has_value());
  EXPECT_DOUBLE_EQ(host->io.full->avg300_percent, 0.31);
  EXPECT_EQ(host->io.full->total_us, 3226149u);
  ASSERT_TRUE(host->memory.present);
  ASSERT_TRUE(host->memory.full.has_value());
  EXPECT_EQ(host->memory.full->total_us, 0u);
  EXPECT_FALSE(host->irq.present);  // this kernel has no /proc/pressure/irq
}

TEST(PressureTest, OlderKernelCpuHasNoFullLine) {
  Result<HostPressure> host = ReadHostPressure(Root(STALLSCOPE_FIXTURES "/swap_host"));
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_TRUE(host->cpu.present);
  EXPECT_TRUE(host->cpu.some.has_value());
  EXPECT_FALSE(host->cpu.full.has_value());
  ASSERT_TRUE(host->memory.full.has_value());
  EXPECT_DOUBLE_EQ(host->memory.full->avg10_percent, 21.40);
  EXPECT_EQ(host->io.some->total_us, 6012345678u);
}

TEST(PressureTest, AbsentDirectoryIsNotPresentNotAnError) {
  // container_v2 has no /proc/pressure, like a kernel before 4.20.
  Result<HostPressure> host = ReadHostPressure(Root(STALLSCOPE_FIXTURES "/container_v2"));
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_FALSE(host->cpu.present);
  EXPECT_FALSE(host->memory.present);
  EXPECT_FALSE(host->io.present);
  EXPECT_FALSE(host->cpu.some.has_value());
}

TEST(PressureTest, CgroupPressureFileHasTheSameFormat) {
  Result<Pressure> pressure =
      ReadPressureFile(STALLSCOPE_FIXTURES "/container_v2/sys/fs/cgroup/memory.pressure");
  ASSERT_TRUE(pressure.ok()) << pressure.status().ToString();
  EXPECT_TRUE(pressure->present);
  EXPECT_DOUBLE_EQ(pressure->some->avg10_percent, 12.50);
  EXPECT_EQ(pressure->full->total_us, 41234567u);
}

TEST(PressureTest, MalformedInputNamesFileAndLine) {
  struct BadInput {
    const char* text;
    const char* message;
  } cases[] = {
      {"some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nhalf avg10=0.00\n",
       "/proc/pressure/io:2: expected 'some' or 'full', got 'half'"},
      {"some avg10=0.00 avg60=0.00 total=0\n", "/proc/pressure/io:1: missing avg300"},
      {"some avg10=0.00 avg60=0.00 avg300=0.00\n", "/proc/pressure/io:1: missing total"},
      {"some avg10=abc avg60=0.00 avg300=0.00 total=0\n",
       "/proc/pressure/io:1: avg10: not a percentage"},
      {"some avg10=nan avg60=0.00 avg300=0.00 total=0\n",
       "/proc/pressure/io:1: avg10: not a percentage"},
      {"some avg10=101.5 avg60=0.00 avg300=0.00 total=0\n",
       "/proc/pressure/io:1: avg10: not a percentage"},
      {"some avg10=0.00 avg60=0.00 avg300=0.00 total=-5\n",
       "/proc/pressure/io:1: total: not a number"},
      {"some avg10 avg60=0.00\n", "/proc/pressure/io:1: expected key=value, got 'avg10'"},
      {"some avg10=0.00 avg60=0.", "/proc/pressure/io:1: missing avg300"},  // truncated
      {"", "/proc/pressure/io: no 'some' or 'full' line"},
  };
  for (const BadInput& bad : cases) {
    Result<Pressure> pressure = ParsePressure(bad.text, "/proc/pressure/io");
    ASSERT_FALSE(pressure.ok()) << bad.text;
    EXPECT_EQ(pressure.status().code(), Status::Code::kParseError);
    EXPECT_EQ(pressure.status().message(), bad.message);
  }
}

TEST(PressureTest, UnknownKeysFromFutureKernelsAreSkipped) {
  Result<Pressure> pressure =
      ParsePressure("some avg10=1.00 avg60=2.00 avg300=3.00 total=4 avg1200=5.00\n", "p");
  ASSERT_TRUE(pressure.ok()) << pressure.status().ToString();
  EXPECT_DOUBLE_EQ(pressure->some->avg300_percent, 3.0);
  EXPECT_FALSE(pressure->full.has_value());
}

}  // namespace
}  // namespace stallscope
