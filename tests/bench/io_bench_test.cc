// RunIoBench on real files in a temporary directory on the disk the tests
// run from: small sizes and runtimes, so each case takes a fraction of a
// second. The figures themselves are checked against fio in
// tests/e2e/bench_io.py; here: the file's life cycle, the read modes and
// engines, and the errors.
#include "bench/io_bench.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace stallscope {
namespace {

class IoBench : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/var/tmp/stallscope-io-bench-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  IoBenchOptions Small() const {
    IoBenchOptions o;
    o.path = dir_;
    o.size_bytes = 16 * kMiB;
    // Long enough that a first read from a cold cache on a loaded CI
    // machine (two test processes beside a build) still completes in it.
    o.runtime_seconds = 0.25;
    o.jobs = 2;
    o.iodepth = 2;
    o.metadata_files = 40;
    return o;
  }
  std::string File() const { return dir_ + "/" + kTestFileName; }
  bool Exists(const std::string& p) const { return std::filesystem::exists(p); }

  std::string dir_;
};

void ExpectPlausible(const IoBenchResult& r) {
  EXPECT_GT(r.sequential.ios, 0u);
  EXPECT_EQ(r.sequential.bytes, r.sequential.ios * kSequentialBlockBytes);
  EXPECT_GT(r.sequential.bytes_per_second(), 1e6);
  // The phase lasts its runtime, and ends with the IO in flight then (which
  // a loaded disk may take long over): no rate is asserted, only that each
  // phase did its IO.
  EXPECT_GE(r.sequential.seconds, 0.2);
  EXPECT_LT(r.sequential.seconds, 2.0);
  EXPECT_EQ(r.sequential.latency.count(), r.sequential.ios);
  EXPECT_GT(r.random.ios, 0u);
  EXPECT_EQ(r.random.bytes, r.random.ios * kRandomBlockBytes);
  EXPECT_LE(r.random.latency.Percentile(0.5), r.random.latency.Percentile(0.99));
  ASSERT_TRUE(r.metadata.has_value());
  ASSERT_EQ(r.metadata->ops.size(), 5u);
  const char* names[] = {"create", "open", "stat", "readdir", "unlink"};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(r.metadata->ops[i].op, names[i]);
    EXPECT_GT(r.metadata->ops[i].per_second(), 0) << names[i];
  }
  EXPECT_EQ(r.metadata->ops[0].ops, 40u);
  EXPECT_EQ(r.metadata->ops[3].ops % 40, 0u);  // whole listings of the 40 files
}

TEST_F(IoBench, WritesReadsAndRemovesTheFile) {
  Result<IoBenchResult> r = RunIoBench(Small());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->plan.reuse);
  EXPECT_EQ(r->plan.bytes, 16 * kMiB);
  EXPECT_TRUE(r->direct) << r->read_mode;  // ext4 and friends take O_DIRECT
  ExpectPlausible(*r);
  EXPECT_FALSE(Exists(File()));
  EXPECT_FALSE(Exists(File() + ".partial"));
  EXPECT_FALSE(Exists(dir_ + "/" + kMetadataDirName));
}

TEST_F(IoBench, KeepKeepsAndTheNextRunReuses) {
  IoBenchOptions o = Small();
  o.keep = true;
  Result<IoBenchResult> first = RunIoBench(o);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->plan.reuse);
  ASSERT_TRUE(Exists(File()));
  EXPECT_EQ(std::filesystem::file_size(File()), 16 * kMiB);
  auto written = std::filesystem::last_write_time(File());
  o.keep = false;
  Result<IoBenchResult> second = RunIoBench(o);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(second->plan.reuse);
  EXPECT_EQ(second->write_seconds, 0);
  EXPECT_FALSE(Exists(File()));
  (void)written;
}

TEST_F(IoBench, ExtendsAShortFileKeepingItsStart) {
  {
    std::ofstream f(File(), std::ios::binary);
    std::string mib(kMiB, 'A');
    for (int i = 0; i < 3; ++i) f << mib;
  }
  IoBenchOptions o = Small();
  o.keep = true;
  o.metadata_files = 0;
  Result<IoBenchResult> r = RunIoBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->plan.write_from, 3 * kMiB);
  EXPECT_FALSE(r->metadata.has_value());
  EXPECT_EQ(std::filesystem::file_size(File()), 16 * kMiB);
  std::ifstream f(File(), std::ios::binary);
  char c = 0;
  f.seekg(3 * kMiB - 1);
  f.get(c);
  EXPECT_EQ(c, 'A');
}

TEST_F(IoBench, BufferedDropsTheCacheAndSaysSo) {
  IoBenchOptions o = Small();
  o.buffered = true;
  Result<IoBenchResult> r = RunIoBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_FALSE(r->direct);
  EXPECT_NE(r->read_mode.find("--buffered"), std::string::npos);
  ASSERT_TRUE(r->cached_after_drop_sequential.has_value());
  EXPECT_LT(*r->cached_after_drop_sequential, 0.5);  // a disk file system drops clean pages
  ExpectPlausible(*r);
}

TEST_F(IoBench, PreadEngineWhereIoUringIsRefused) {
  IoBenchOptions o = Small();
  o.engine = ReadEngine::kPsync;
  Result<IoBenchResult> r = RunIoBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->engine, ReadEngine::kPsync);
  ExpectPlausible(*r);
}

TEST_F(IoBench, StopEndsEarlyAndRemovesEverything) {
  std::atomic<bool> stop{true};
  IoBenchOptions o = Small();
  o.stop = &stop;
  o.keep = true;
  Result<IoBenchResult> r = RunIoBench(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable);
  EXPECT_FALSE(Exists(File() + ".partial"));
  EXPECT_FALSE(Exists(File()));  // interrupted while writing: nothing complete to keep
}

TEST_F(IoBench, BadPathsAndFlagsNameThemselves) {
  IoBenchOptions o = Small();
  o.path = dir_ + "/missing";
  Result<IoBenchResult> r = RunIoBench(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound);
  EXPECT_NE(r.status().message().find(o.path), std::string::npos);
  o.path = dir_ + "/plain";
  std::ofstream(o.path) << "x";
  r = RunIoBench(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a directory"), std::string::npos);
  o = Small();
  o.jobs = 0;
  EXPECT_NE(RunIoBench(o).status().message().find("--jobs"), std::string::npos);
  o = Small();
  o.iodepth = 5000;
  EXPECT_NE(RunIoBench(o).status().message().find("--iodepth"), std::string::npos);
  o = Small();
  o.runtime_seconds = 0;
  EXPECT_NE(RunIoBench(o).status().message().find("--runtime"), std::string::npos);
  // A directory where the test file goes.
  o = Small();
  std::filesystem::create_directory(File());
  r = RunIoBench(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not a regular file"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_directory(File()));  // left alone
}

}  // namespace
}  // namespace stallscope
