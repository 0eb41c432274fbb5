// The parallel walk and the census on real trees made in a temp dir: counts,
// bytes, histogram, depth (past PATH_MAX), symlink loops not followed, an
// unreadable directory counted and not fatal (as an unprivileged user: root
// reads everything, so a forked child drops to nobody), same answer with 1
// and many threads; the getdents64 record parser on hand-made buffers.
#include "data/walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "data/census.h"

namespace stallscope {
namespace {

class TempTree {
 public:
  TempTree() {
    char pattern[] = "/tmp/stallscope-walk-XXXXXX";
    const char* dir = ::mkdtemp(pattern);
    EXPECT_NE(dir, nullptr) << std::strerror(errno);
    path_ = dir == nullptr ? "" : dir;
    ::chmod(path_.c_str(), 0755);  // a child dropped to nobody must be able to enter
  }
  ~TempTree() {
    // Put permissions back so the removal sees everything; rm copes with
    // paths past PATH_MAX.
    std::string cmd = "chmod -R u+rwx '" + path_ + "' 2>/dev/null; rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) ADD_FAILURE() << "could not remove " << path_;
  }
  const std::string& path() const { return path_; }
  std::string At(const std::string& rel) const { return path_ + "/" + rel; }

  void Dir(const std::string& rel) const {
    ASSERT_EQ(::mkdir(At(rel).c_str(), 0755), 0) << rel << ": " << std::strerror(errno);
  }
  void File(const std::string& rel, uint64_t size) const {
    const int fd = ::open(At(rel).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0) << rel << ": " << std::strerror(errno);
    std::string data(std::min<uint64_t>(size, 1 << 20), 'x');
    uint64_t left = size;
    while (left > 0) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left, data.size()));
      ASSERT_EQ(::write(fd, data.data(), n), static_cast<ssize_t>(n));
      left -= n;
    }
    ::close(fd);
  }
  void Link(const std::string& target, const std::string& rel) const {
    ASSERT_EQ(::symlink(target.c_str(), At(rel).c_str()), 0) << std::strerror(errno);
  }

 private:
  std::string path_;
};

CensusOptions Threads(int n) {
  CensusOptions options;
  options.threads = n;
  options.seed = 42;
  return options;
}

// root/
//   a/f1 (10 B)   a/b/f2 (5000 B)   a/b/c/f3 (70000 B)   a/b/up -> ../..
//   big (2 MiB)   empty (0 B)   emptydir/   loop -> .   dangling -> nowhere   fifo
void MakeSmallTree(const TempTree& t) {
  t.Dir("a");
  t.Dir("a/b");
  t.Dir("a/b/c");
  t.Dir("emptydir");
  t.File("a/f1", 10);
  t.File("a/b/f2", 5000);
  t.File("a/b/c/f3", 70000);
  t.File("big", 2 << 20);
  t.File("empty", 0);
  t.Link(".", "loop");
  t.Link("../..", "a/b/up");
  t.Link("/nonexistent/target", "dangling");
  ASSERT_EQ(::mkfifo(t.At("fifo").c_str(), 0644), 0) << std::strerror(errno);
}

TEST(Walk, CountsBytesHistogramDepthAndSkipsSymlinks) {
  TempTree t;
  MakeSmallTree(t);
  for (int threads : {1, 3, 16}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    Result<DatasetCensus> c = TakeCensus(t.path(), Threads(threads));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c->threads, threads);
    EXPECT_EQ(c->files, 5u);
    EXPECT_EQ(c->bytes, 10u + 5000u + 70000u + (2u << 20));
    EXPECT_EQ(c->directories, 4u);
    EXPECT_EQ(c->symlinks, 3u);  // the loop is counted once, not walked
    EXPECT_EQ(c->other_entries, 1u);
    EXPECT_EQ(c->empty_files, 1u);
    EXPECT_EQ(c->largest_file_bytes, 2u << 20);
    EXPECT_EQ(c->unreadable, 0u);
    EXPECT_EQ(c->histogram[0].files, 2u);  // f1, empty
    EXPECT_EQ(c->histogram[0].bytes, 10u);
    EXPECT_EQ(c->histogram[1].files, 1u);  // f2
    EXPECT_EQ(c->histogram[2].files, 1u);  // f3
    EXPECT_EQ(c->histogram[3].files, 1u);  // big
    EXPECT_EQ(c->histogram[3].bytes, 2u << 20);
    EXPECT_EQ(c->histogram[4].files + c->histogram[5].files, 0u);
    EXPECT_EQ(c->SmallFiles(), 4u);
    EXPECT_EQ(c->max_depth, 4);
    EXPECT_EQ(c->deepest_path, c->resolved_path + "/a/b/c/f3");
    EXPECT_FALSE(c->residency.sampled);
    EXPECT_EQ(c->residency.files_checked, 5u);
    ASSERT_TRUE(c->latency.has_value());
    EXPECT_EQ(c->latency->files, 5u);
    EXPECT_GT(c->latency->open_p50_us, 0);
    EXPECT_GE(c->latency->open_p99_us, c->latency->open_p50_us);
  }
}

TEST(Walk, BucketEdgesAreExclusive) {
  EXPECT_EQ(SizeBucketOf(0), 0u);
  EXPECT_EQ(SizeBucketOf(4095), 0u);
  EXPECT_EQ(SizeBucketOf(4096), 1u);
  EXPECT_EQ(SizeBucketOf((1 << 20) - 1), 2u);
  EXPECT_EQ(SizeBucketOf(1 << 20), 3u);
  EXPECT_EQ(SizeBucketOf(256ull << 20), 5u);
  EXPECT_EQ(SizeBucketLabel(0), "<4K");
  EXPECT_EQ(SizeBucketLabel(5), ">=256M");
}

TEST(Walk, TreeDeeperThanPathMax) {
  TempTree t;
  const std::string component(40, 'd');
  const int levels = (PATH_MAX / 41) + 20;  // well past PATH_MAX
  int fd = ::open(t.path().c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  for (int i = 0; i < levels; ++i) {
    ASSERT_EQ(::mkdirat(fd, component.c_str(), 0755), 0) << std::strerror(errno);
    const int next = ::openat(fd, component.c_str(), O_RDONLY | O_DIRECTORY);
    ::close(fd);
    ASSERT_GE(next, 0);
    fd = next;
  }
  const int file = ::openat(fd, "bottom.bin", O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(file, 0);
  ASSERT_EQ(::write(file, "12345", 5), 5);
  ::close(file);
  ::close(fd);

  Result<DatasetCensus> c = TakeCensus(t.path(), Threads(4));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->files, 1u);
  EXPECT_EQ(c->bytes, 5u);
  EXPECT_EQ(c->directories, static_cast<uint64_t>(levels));
  EXPECT_EQ(c->max_depth, levels + 1);
  EXPECT_GT(c->deepest_path.size(), static_cast<size_t>(PATH_MAX));
  EXPECT_EQ(c->unreadable, 0u) << (c->unreadable_examples.empty() ? "" : c->unreadable_examples[0]);
}

struct UnreadableResult {
  uint64_t files = 0, unreadable = 0, directories = 0;
  bool ok = false;
  char example[256] = {};
};

UnreadableResult CensusOf(const std::string& path) {
  UnreadableResult out;
  Result<DatasetCensus> c = TakeCensus(path, Threads(4));
  out.ok = c.ok();
  if (c.ok()) {
    out.files = c->files;
    out.unreadable = c->unreadable;
    out.directories = c->directories;
    if (!c->unreadable_examples.empty()) {
      std::strncpy(out.example, c->unreadable_examples[0].c_str(), sizeof(out.example) - 1);
    }
  }
  return out;
}

TEST(Walk, UnreadableDirectoryIsCountedNotFatal) {
  TempTree t;
  t.Dir("open");
  t.File("open/a", 100);
  t.File("open/b", 100);
  t.Dir("locked");
  t.File("locked/secret1", 100);
  t.File("locked/secret2", 100);
  ASSERT_EQ(::chmod(t.At("locked").c_str(), 0), 0);

  UnreadableResult r;
  if (::geteuid() != 0) {
    r = CensusOf(t.path());
  } else {
    // Root reads any directory: walk as nobody in a child, report through a pipe.
    int pipe_fds[2];
    ASSERT_EQ(::pipe(pipe_fds), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(pipe_fds[0]);
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
      UnreadableResult in_child = CensusOf(t.path());
      const ssize_t n = ::write(pipe_fds[1], &in_child, sizeof(in_child));
      ::_exit(n == static_cast<ssize_t>(sizeof(in_child)) ? 0 : 4);
    }
    ::close(pipe_fds[1]);
    ssize_t n = ::read(pipe_fds[0], &r, sizeof(r));
    ::close(pipe_fds[0]);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "child walking as nobody failed, status " << status;
    ASSERT_EQ(n, static_cast<ssize_t>(sizeof(r)));
  }
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.files, 2u);  // open/a, open/b; the locked ones are not seen
  EXPECT_EQ(r.directories, 2u);
  EXPECT_EQ(r.unreadable, 1u);
  EXPECT_NE(std::string(r.example).find("locked: Permission denied"), std::string::npos)
      << r.example;
}

TEST(Walk, BadRootIsAnErrorNamingIt) {
  Result<DatasetCensus> c = TakeCensus("/nonexistent/stallscope-data", Threads(2));
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(c.status().IsNotFound());
  EXPECT_NE(c.status().message().find("/nonexistent/stallscope-data"), std::string::npos);

  Result<DatasetCensus> dev = TakeCensus("/dev/null", Threads(2));
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.status().message().find("/dev/null"), std::string::npos);
}

TEST(Walk, SingleFileIsADatasetOfOne) {
  TempTree t;
  t.File("one.tar", 300000);
  Result<DatasetCensus> c = TakeCensus(t.At("one.tar"), Threads(2));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->files, 1u);
  EXPECT_EQ(c->bytes, 300000u);
  EXPECT_EQ(c->histogram[2].files, 1u);
  EXPECT_EQ(c->residency.files_checked, 1u);
}

// Builds one linux_dirent64 record.
void AppendDirent(std::vector<char>& buffer, const std::string& name, unsigned char type,
                  size_t reclen = 0) {
  if (reclen == 0) reclen = (19 + name.size() + 1 + 7) / 8 * 8;
  const size_t at = buffer.size();
  buffer.resize(at + reclen, '\0');
  const uint16_t len16 = static_cast<uint16_t>(reclen);
  std::memcpy(buffer.data() + at + 16, &len16, 2);
  buffer[at + 18] = static_cast<char>(type);
  std::memcpy(buffer.data() + at + 19, name.data(), std::min(name.size(), reclen - 19));
}

TEST(Dirents, ParsesRecords) {
  std::vector<char> buffer;
  AppendDirent(buffer, ".", DT_DIR);
  AppendDirent(buffer, "img0001.jpg", DT_REG);
  AppendDirent(buffer, "sub", DT_DIR);
  std::vector<std::pair<std::string, unsigned char>> seen;
  Status s = ParseDirents(
      buffer, [&](const DirentRecord& r) { seen.emplace_back(std::string(r.name), r.type); });
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[1].first, "img0001.jpg");
  EXPECT_EQ(seen[1].second, DT_REG);
  EXPECT_EQ(seen[2].first, "sub");
}

TEST(Dirents, RejectsMalformedRecords) {
  std::vector<char> zero_length;
  AppendDirent(zero_length, "a", DT_REG);
  zero_length[16] = 0;
  zero_length[17] = 0;  // reclen 0 would loop forever
  EXPECT_FALSE(ParseDirents(zero_length, [](const DirentRecord&) {}).ok());

  std::vector<char> past_end;
  AppendDirent(past_end, "a", DT_REG);
  past_end.resize(past_end.size() - 4);
  EXPECT_FALSE(ParseDirents(past_end, [](const DirentRecord&) {}).ok());

  std::vector<char> unterminated;
  AppendDirent(unterminated, std::string(5, 'n'), DT_REG, 24);  // 19 + 5: no room for NUL
  EXPECT_FALSE(ParseDirents(unterminated, [](const DirentRecord&) {}).ok());

  std::vector<char> short_header(10, '\0');
  EXPECT_FALSE(ParseDirents(short_header, [](const DirentRecord&) {}).ok());
}

}  // namespace
}  // namespace stallscope
