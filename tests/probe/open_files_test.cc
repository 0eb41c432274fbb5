// ReadOpenInputs on a fixture tree built here (a loader's descriptors: an
// archive on NFS, a deleted stream, a checkpoint open for writing, sockets,
// pipes, devices) and on this test's own live process, whose open file it
// must find with the offset it has read to.
#include "probe/open_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace stallscope {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

class LoaderTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/stallscope-openfiles-XXXXXX";
    ASSERT_NE(mkdtemp(name), nullptr);
    dir_ = name;
    const fs::path proc = dir_ / "proc/4242";
    fs::create_directories(proc / "fd");
    auto fd = [&](int n, const std::string& target, const std::string& fdinfo) {
      fs::create_symlink(target, proc / "fd" / std::to_string(n));
      if (!fdinfo.empty()) Write(proc / "fdinfo" / std::to_string(n), fdinfo);
    };
    fd(0, "/dev/pts/0", "pos:\t0\nflags:\t02\nmnt_id:\t25\nino:\t3\n");
    fd(3, "socket:[81234]", "pos:\t0\nflags:\t02004002\n");
    fd(4, "pipe:[81235]", "pos:\t0\nflags:\t00\n");
    fd(5, "/data/imagenet/train-00001.zip", "pos:\t524288\nflags:\t0100000\nmnt_id:\t31\n");
    fd(6, "/scratch/labels.csv.gz (deleted)", "pos:\t12\nflags:\t02100000\nmnt_id:\t30\n");
    fd(7, "/ckpt/model.pt", "pos:\t4096\nflags:\t0100001\nmnt_id:\t30\n");
    fd(8, "/data/imagenet", "pos:\t0\nflags:\t0200000\nmnt_id:\t31\n");  // a directory
    fd(9, "/data/imagenet/gone.bin", "");  // closed before its fdinfo was read
    Write(proc / "mountinfo",
          "30 1 253:1 / / rw,relatime - ext4 /dev/vda1 rw\n"
          "31 30 0:52 /export /data rw,relatime - nfs4 fileserver:/export rw,vers=4.2\n");
    std::ifstream zip(STALLSCOPE_FIXTURES "/input_formats/shard-deflate.zip", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(zip)), std::istreambuf_iterator<char>());
    Write(dir_ / "data/imagenet/train-00001.zip", bytes);
    std::ifstream gz(STALLSCOPE_FIXTURES "/input_formats/labels.csv.gz", std::ios::binary);
    Write(dir_ / "scratch/labels.csv.gz",
          std::string((std::istreambuf_iterator<char>(gz)), std::istreambuf_iterator<char>()));
    Write(dir_ / "ckpt/model.pt", "weights");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(LoaderTree, OnlyFilesOpenForReadingWithTheirPlaceAndKind) {
  Result<OpenInputs> got = ReadOpenInputs(Root(dir_.string()), 4242);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->files.size(), 2u);
  const OpenInput& zip = got->files[0];
  EXPECT_EQ(zip.fd, 5);
  EXPECT_EQ(zip.path, "/data/imagenet/train-00001.zip");
  EXPECT_EQ(zip.position, 524288u);
  EXPECT_EQ(zip.size, fs::file_size(dir_ / "data/imagenet/train-00001.zip"));
  EXPECT_EQ(zip.fs_type, "nfs4");
  EXPECT_TRUE(zip.remote);
  EXPECT_EQ(zip.major, 0u);
  EXPECT_EQ(zip.minor, 52u);
  EXPECT_EQ(zip.format.kind, "zip");
  EXPECT_TRUE(zip.format.compressed);
  const OpenInput& gz = got->files[1];
  EXPECT_EQ(gz.path, "/scratch/labels.csv.gz");
  EXPECT_TRUE(gz.deleted);
  EXPECT_EQ(gz.fs_type, "ext4");
  EXPECT_FALSE(gz.remote);
  EXPECT_EQ(gz.major, 253u);
  EXPECT_EQ(gz.format.kind, "gzip");
  // The tty, the socket, the pipe, the checkpoint being written, the
  // directory; the descriptor that closed.
  EXPECT_EQ(got->skipped, 5u);
  EXPECT_EQ(got->vanished, 1u);
}

// A second read with a cache gives the same files, with the mount, device
// and format from the cache (no mountinfo read: the fixture's is removed).
TEST_F(LoaderTree, CacheGivesTheSameFactsWithoutRereading) {
  OpenInputCache cache;
  Result<OpenInputs> first = ReadOpenInputs(Root(dir_.string()), 4242, &cache);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(cache.misses, 2u);
  EXPECT_EQ(cache.hits, 0u);
  // The same files behind new descriptors (reopened): the facts by file.
  cache.by_fd.clear();
  fs::remove(dir_ / "proc/4242/mountinfo");
  Result<OpenInputs> again = ReadOpenInputs(Root(dir_.string()), 4242, &cache);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(cache.hits, 2u);
  ASSERT_EQ(again->files.size(), 2u);
  EXPECT_EQ(again->files[0].fs_type, "nfs4");
  EXPECT_TRUE(again->files[0].remote);
  EXPECT_EQ(again->files[0].format.kind, "zip");
  EXPECT_EQ(again->files[1].major, 253u);
  // Without the cache the mounts are unknown now.
  Result<OpenInputs> bare = ReadOpenInputs(Root(dir_.string()), 4242);
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->files[0].fs_type, "");
}

// A descriptor whose link still names the same file, read-only, is not
// stat'ed again (its offset is read anew), and one that now names another
// file, or is now open for writing, is read as new.
TEST_F(LoaderTree, DescriptorsSeenBeforeKeepTheirReadingUntilTheirTargetChanges) {
  OpenInputCache cache;
  ASSERT_TRUE(ReadOpenInputs(Root(dir_.string()), 4242, &cache).ok());
  EXPECT_EQ(cache.fd_hits, 0u);
  // The zip removed: a descriptor stat'ed again would count as vanished;
  // its offset moved on.
  fs::remove(dir_ / "data/imagenet/train-00001.zip");
  Write(dir_ / "proc/4242/fdinfo/5", "pos:\t600000\nflags:\t0100000\n");
  Result<OpenInputs> again = ReadOpenInputs(Root(dir_.string()), 4242, &cache);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->files.size(), 2u);
  EXPECT_EQ(again->files[0].format.kind, "zip");  // as first read
  EXPECT_EQ(again->files[0].position, 600000u);   // read anew
  EXPECT_EQ(again->vanished, 1u);                 // fd 9, never readable
  EXPECT_EQ(again->skipped, 5u);
  EXPECT_EQ(cache.fd_hits, 3u);  // fds 5, 6 and the directory 8
  // Reopened for writing on the same descriptor: not an input any more.
  Write(dir_ / "proc/4242/fdinfo/6", "pos:\t0\nflags:\t0100001\n");
  Result<OpenInputs> written = ReadOpenInputs(Root(dir_.string()), 4242, &cache);
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(written->files.size(), 1u);
  // fd 5 now names another file (a loader opened the next shard).
  fs::remove(dir_ / "proc/4242/fd/5");
  fs::create_symlink("/scratch/labels.csv.gz", dir_ / "proc/4242/fd/5");
  Write(dir_ / "proc/4242/fdinfo/5", "pos:\t3\nflags:\t0100000\n");
  Result<OpenInputs> moved = ReadOpenInputs(Root(dir_.string()), 4242, &cache);
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(moved->files[0].path, "/scratch/labels.csv.gz");
  EXPECT_EQ(moved->files[0].position, 3u);
}

// At most max_per_sample pids a sample, those read longest ago first.
TEST(OpenInputSampler, RotatesThroughThePidsThatRan) {
  fs::path dir = fs::temp_directory_path() / ("stallscope-rotate-" + std::to_string(getpid()));
  fs::remove_all(dir);
  for (int pid : {11, 12, 13}) {
    fs::create_directories(dir / "proc" / std::to_string(pid) / "fd");
    fs::create_directories(dir / "proc" / std::to_string(pid) / "fdinfo");
    Write(dir / "data" / (std::to_string(pid) + ".bin"), "x");
    fs::create_symlink("/data/" + std::to_string(pid) + ".bin",
                       dir / "proc" / std::to_string(pid) / "fd" / "3");
    Write(dir / "proc" / std::to_string(pid) / "fdinfo" / "3", "pos:\t0\nflags:\t0100000\n");
  }
  OpenInputSampler sampler(Root(dir.string()), 2);
  auto pids = [](const std::vector<OpenInput>& files) {
    std::vector<int32_t> out;
    for (const OpenInput& f : files) out.push_back(f.pid);
    return out;
  };
  EXPECT_EQ(pids(sampler.Sample({11, 12, 13})), (std::vector<int32_t>{11, 12}));
  EXPECT_EQ(pids(sampler.Sample({11, 12, 13})), (std::vector<int32_t>{13, 11}));
  EXPECT_EQ(pids(sampler.Sample({12})), (std::vector<int32_t>{12}));
  EXPECT_TRUE(sampler.Sample({}).empty());
  fs::remove_all(dir);
}

TEST_F(LoaderTree, CappedAndGone) {
  Result<OpenInputs> one = ReadOpenInputs(Root(dir_.string()), 4242, nullptr, 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->files.size(), 1u);
  EXPECT_EQ(one->capped, 1u);
  Result<OpenInputs> gone = ReadOpenInputs(Root(dir_.string()), 999);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().ToString().find("pid 999") != std::string::npos, true)
      << gone.status().ToString();
}

TEST(OpenInputsLive, ThisProcesssOpenArchiveAndHowFarItRead) {
  std::string path = STALLSCOPE_FIXTURES "/input_formats/shard-stored.zip";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  char buffer[100];
  ASSERT_EQ(read(fd, buffer, sizeof(buffer)), 100);
  Result<OpenInputs> got = ReadOpenInputs(Root("/"), getpid());
  close(fd);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const OpenInput* mine = nullptr;
  for (const OpenInput& f : got->files) {
    if (f.fd == fd) mine = &f;
  }
  ASSERT_NE(mine, nullptr);
  EXPECT_EQ(mine->path, fs::canonical(path).string());
  EXPECT_EQ(mine->position, 100u);  // its own offset, not moved by the probe's read
  EXPECT_EQ(mine->format.kind, "zip");
  EXPECT_FALSE(mine->format.compressed);
  EXPECT_FALSE(mine->fs_type.empty());
}

TEST(Fdinfo, PosAndOctalFlagsOrAnErrorNamingTheFile) {
  Result<Fdinfo> ok = ParseFdinfo("pos:\t77\nflags:\t0100002\nmnt_id:\t5\n", "/proc/1/fdinfo/3");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->pos, 77u);
  EXPECT_EQ(ok->flags, 0100002u);
  Result<Fdinfo> bad = ParseFdinfo("pos:\tx\nflags:\t9\n", "/proc/1/fdinfo/3");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("/proc/1/fdinfo/3"), std::string::npos);
}

}  // namespace
}  // namespace stallscope
