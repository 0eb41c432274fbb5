// Page-cache residency and the file system of a census, on real files: a file
// read into the cache against one dropped with posix_fadvise(DONTNEED), the
// residency sample, and a tmpfs mounted by the test (root only).
#include "data/census.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/file.h"
#include "data/fs_magic.h"
#include "data/residency.h"
#include "probe/mounts.h"

namespace stallscope {
namespace {

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/stallscope-census-XXXXXX";
    const char* dir = ::mkdtemp(pattern);
    EXPECT_NE(dir, nullptr) << std::strerror(errno);
    path_ = dir == nullptr ? "" : dir;
  }
  ~TempDir() {
    std::string cmd = "rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "could not remove " << path_;
  }
  std::string At(const std::string& rel) const { return path_ + "/" + rel; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes `size` bytes and makes them durable, so DONTNEED can drop them
// (dirty pages are not dropped).
void WriteSynced(const std::string& path, size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
  std::vector<char> data(size, 'r');
  ASSERT_EQ(::write(fd, data.data(), size), static_cast<ssize_t>(size));
  ASSERT_EQ(::fsync(fd), 0);
  ::close(fd);
}

void ReadAll(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  std::vector<char> buffer(1 << 16);
  while (::read(fd, buffer.data(), buffer.size()) > 0) {
  }
  ::close(fd);
}

void Drop(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  ::close(fd);
}

TEST(Residency, CachedFileAgainstDroppedFile) {
  TempDir d;
  const size_t size = (4 << 20) + 1234;  // a partial last page
  WriteSynced(d.At("hot"), size);
  WriteSynced(d.At("cold"), size);
  ReadAll(d.At("hot"));
  Drop(d.At("cold"));

  Result<FileResidency> cold = MeasureResidency(d.At("cold"));
  ASSERT_TRUE(cold.ok()) << cold.status().ToString();
  if (cold->resident_bytes > size / 2) {
    GTEST_SKIP() << "this file system keeps pages after POSIX_FADV_DONTNEED (tmpfs?)";
  }
  Result<FileResidency> hot = MeasureResidency(d.At("hot"));
  ASSERT_TRUE(hot.ok()) << hot.status().ToString();
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_EQ(hot->size_bytes, size);
  EXPECT_EQ(hot->pages, (size + page - 1) / page);
  EXPECT_EQ(hot->resident_pages, hot->pages);
  EXPECT_EQ(hot->resident_bytes, size);  // the last page counts its 1234 bytes only
  EXPECT_LT(cold->resident_bytes, size / 10);

  // Looking did not pull the cold file in.
  Result<FileResidency> again = MeasureResidency(d.At("cold"));
  ASSERT_TRUE(again.ok());
  EXPECT_LT(again->resident_bytes, size / 10);
}

TEST(Residency, EmptyMissingAndNotRegular) {
  TempDir d;
  WriteSynced(d.At("empty"), 0);
  Result<FileResidency> empty = MeasureResidency(d.At("empty"));
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->pages, 0u);
  Result<FileResidency> missing = MeasureResidency(d.At("missing"));
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound());
  EXPECT_NE(missing.status().message().find(d.At("missing")), std::string::npos);
  Result<FileResidency> dir = MeasureResidency(d.path());
  EXPECT_FALSE(dir.ok());
}

TEST(Census, ResidencyOfTheTreeAndItsSample) {
  TempDir d;
  const size_t size = 1 << 20;
  for (int i = 0; i < 3; ++i) {
    WriteSynced(d.At("hot" + std::to_string(i)), size);
    ReadAll(d.At("hot" + std::to_string(i)));
    WriteSynced(d.At("cold" + std::to_string(i)), size);
    Drop(d.At("cold" + std::to_string(i)));
  }
  Result<FileResidency> probe = MeasureResidency(d.At("cold0"));
  ASSERT_TRUE(probe.ok());
  if (probe->resident_bytes > size / 2) GTEST_SKIP() << "DONTNEED does not drop pages here";

  CensusOptions all;
  all.seed = 7;
  Result<DatasetCensus> c = TakeCensus(d.path(), all);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->residency.sampled);
  EXPECT_EQ(c->residency.files_checked, 6u);
  EXPECT_EQ(c->residency.bytes_checked, 6 * size);
  EXPECT_NEAR(c->residency.resident_fraction, 0.5, 0.05);

  CensusOptions sampled;
  sampled.seed = 7;
  sampled.residency_sample_files = 2;
  sampled.latency_sample_files = 2;
  Result<DatasetCensus> s = TakeCensus(d.path(), sampled);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->residency.sampled);
  EXPECT_EQ(s->residency.files_checked, 2u);
  EXPECT_EQ(s->files, 6u);  // the counts are never sampled
  ASSERT_TRUE(s->latency.has_value());
  EXPECT_EQ(s->latency->files, 2u);
}

TEST(Census, SampleIsUniformAcrossThreads) {
  // 400 files in 8 folders: over many seeds, each file is drawn about equally.
  TempDir d;
  std::vector<std::string> names;
  for (int dir = 0; dir < 8; ++dir) {
    ASSERT_EQ(::mkdir(d.At("d" + std::to_string(dir)).c_str(), 0755), 0);
    for (int f = 0; f < 50; ++f) {
      const std::string rel = "d" + std::to_string(dir) + "/f" + std::to_string(f);
      const int fd = ::open(d.At(rel).c_str(), O_WRONLY | O_CREAT, 0644);
      ASSERT_GE(fd, 0);
      // Folder k's files are k KiB: a biased sample would bias the bytes.
      std::vector<char> data(static_cast<size_t>(dir + 1) * 1024, 'u');
      ASSERT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
      ::close(fd);
    }
  }
  double bytes = 0;
  uint64_t checked = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    CensusOptions o;
    o.seed = seed;
    o.threads = 4;
    o.residency_sample_files = 40;
    o.latency_sample_files = 1;
    Result<DatasetCensus> c = TakeCensus(d.path(), o);
    ASSERT_TRUE(c.ok());
    ASSERT_EQ(c->residency.files_checked, 40u);
    bytes += static_cast<double>(c->residency.bytes_checked);
    checked += c->residency.files_checked;
  }
  // Mean file size is 4.5 KiB; a sample of 800 draws lands within ~5%.
  EXPECT_NEAR(bytes / static_cast<double>(checked), 4.5 * 1024, 0.1 * 4.5 * 1024);
}

TEST(FileSystem, TheTempDirMatchesStatfsAndMountinfo) {
  TempDir d;
  Result<DatasetCensus> c = TakeCensus(d.path(), CensusOptions{});
  ASSERT_TRUE(c.ok());
  struct statfs fs {};
  ASSERT_EQ(::statfs(d.path().c_str(), &fs), 0);
  ASSERT_TRUE(c->statfs_type.has_value());
  EXPECT_EQ(static_cast<uint32_t>(*c->statfs_type), static_cast<uint32_t>(fs.f_type));
  EXPECT_EQ(c->statfs_name, FsMagicName(fs.f_type));
  Result<PathDevice> device = DeviceForPath(Root("/"), c->resolved_path);
  ASSERT_TRUE(device.ok());
  EXPECT_EQ(c->fs_type, device->fs_type);
  EXPECT_EQ(c->device, device->device);
  EXPECT_FALSE(c->fs_type.empty());
}

TEST(FileSystem, MountedTmpfsIsNamedAndHasNoDevice) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a tmpfs needs root";
  TempDir d;
  const std::string mnt = d.At("mnt");
  ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
  if (::mount("stallscope-test", mnt.c_str(), "tmpfs", 0, "size=8m") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  {
    const int fd = ::open((mnt + "/x").c_str(), O_WRONLY | O_CREAT, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::write(fd, "abc", 3), 3);
    ::close(fd);
  }
  Result<DatasetCensus> c = TakeCensus(mnt, CensusOptions{});
  ::umount2(mnt.c_str(), MNT_DETACH);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->fs_type, "tmpfs");
  EXPECT_EQ(c->statfs_name, "tmpfs");
  EXPECT_EQ(c->source, "stallscope-test");
  EXPECT_EQ(c->mount_point, c->resolved_path);
  EXPECT_TRUE(c->device.empty());
  EXPECT_FALSE(c->remote);
  EXPECT_EQ(c->files, 1u);
  EXPECT_EQ(c->residency.resident_fraction, 1.0);  // tmpfs pages live in the cache
}

TEST(FileSystem, MagicNames) {
  EXPECT_EQ(FsMagicName(0x6969), "nfs");
  EXPECT_TRUE(IsRemoteFsMagic(0x6969));
  EXPECT_EQ(FsMagicName(0x0BD00BD0), "lustre");
  EXPECT_EQ(FsMagicName(0x47504653), "gpfs");
  // f_type is a signed long: a sign-extended CIFS magic is still CIFS.
  EXPECT_EQ(FsMagicName(static_cast<int64_t>(static_cast<int32_t>(0xFF534D42))), "cifs");
  EXPECT_TRUE(IsRemoteFsMagic(static_cast<int64_t>(static_cast<int32_t>(0xFF534D42))));
  EXPECT_EQ(FsMagicName(0xEF53), "ext4");
  EXPECT_FALSE(IsRemoteFsMagic(0xEF53));
  EXPECT_EQ(FsMagicName(0x65735546), "fuse");
  EXPECT_FALSE(IsRemoteFsMagic(0x65735546));  // the daemon decides, via mountinfo
  EXPECT_EQ(FsMagicName(0x12345678), "");
}

}  // namespace
}  // namespace stallscope
