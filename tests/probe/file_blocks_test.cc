// ReadFileBlocks on real files and pipes: every byte once and in order
// (from the descriptor's offset, across window and block edges), a file
// that grows while it is read, and one another process truncates (an error
// naming the file, not a SIGBUS), also in a window mapped ahead; no window
// stays mapped after a read, however it ended.
#include "probe/file_blocks.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

namespace stallscope {
namespace {

class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/stallscope-blocks-XXXXXX";
    fd_ = mkstemp(name);
    path_ = name;
    EXPECT_GE(fd_, 0);
    EXPECT_EQ(write(fd_, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    lseek(fd_, 0, SEEK_SET);
  }
  ~TempFile() {
    close(fd_);
    unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// Bytes that differ at every offset mod a prime, so a block read twice, or
// out of order, changes the result.
std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

std::string ReadAll(int fd, Status* status, size_t* blocks = nullptr) {
  std::string out;
  size_t count = 0;
  *status = ReadFileBlocks(fd, "the log", [&](std::string_view block) {
    EXPECT_LE(block.size(), kFileBlockBytes);
    EXPECT_FALSE(block.empty());
    out.append(block);
    ++count;
    return Status::Ok();
  });
  if (blocks) *blocks = count;
  return out;
}

// How many mappings of `path` the process has (/proc/self/maps).
int MappingsOf(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  int count = 0;
  for (std::string line; std::getline(maps, line);) {
    if (line.size() >= path.size() &&
        line.compare(line.size() - path.size(), path.size(), path) == 0) {
      ++count;
    }
  }
  return count;
}

TEST(FileBlocks, AFileOfManyBlocksArrivesWholeAndInOrder) {
  // Past several windows, and not a multiple of a block or a page.
  std::string text = Pattern((25 << 20) + 12345);
  TempFile file(text);
  Status s;
  size_t blocks = 0;
  std::string got = ReadAll(file.fd(), &s, &blocks);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(got.size(), text.size());
  EXPECT_TRUE(got == text);
  EXPECT_GE(blocks, 26u);
  EXPECT_EQ(MappingsOf(file.path()), 0);
}

TEST(FileBlocks, StartsAtTheDescriptorsOffset) {
  std::string text = Pattern(3 << 20);
  TempFile file(text);
  ASSERT_EQ(lseek(file.fd(), 5000, SEEK_SET), 5000);  // not page-aligned
  Status s;
  std::string got = ReadAll(file.fd(), &s);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(got == text.substr(5000));
}

TEST(FileBlocks, AnEmptyFileAndAPipe) {
  TempFile empty("");
  Status s;
  EXPECT_EQ(ReadAll(empty.fd(), &s), "");
  EXPECT_TRUE(s.ok());

  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  std::string text = Pattern(300000);
  std::thread writer([&] {
    size_t done = 0;
    while (done < text.size()) {
      ssize_t n = write(pipe_fds[1], text.data() + done, text.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    close(pipe_fds[1]);
  });
  std::string got = ReadAll(pipe_fds[0], &s);
  writer.join();
  close(pipe_fds[0]);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(got == text);
}

TEST(FileBlocks, WhatTheFileGrewByWhileItWasReadIsReadToo) {
  std::string text = Pattern(2 << 20);
  TempFile file(text);
  int appender = open(file.path().c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(appender, 0);
  std::string more = "appended while the first block was read\n";
  std::string got;
  bool appended = false;
  Status s = ReadFileBlocks(file.fd(), "the log", [&](std::string_view block) {
    if (!appended) {
      EXPECT_EQ(write(appender, more.data(), more.size()), static_cast<ssize_t>(more.size()));
      appended = true;
    }
    got.append(block);
    return Status::Ok();
  });
  close(appender);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(got == text + more);
}

TEST(FileBlocks, AFileTruncatedWhileItIsReadFailsNamingIt) {
  std::string text = Pattern(4 << 20);
  TempFile file(text);
  int writer = open(file.path().c_str(), O_WRONLY);
  ASSERT_GE(writer, 0);
  size_t blocks = 0;
  uint64_t sum = 0;
  Status s = ReadFileBlocks(file.fd(), "the log", [&](std::string_view block) {
    if (blocks++ == 0) {
      EXPECT_EQ(ftruncate(writer, 4096), 0);  // another process's doing
    }
    for (char c : block) sum += static_cast<unsigned char>(c);  // touches every page
    return Status::Ok();
  });
  close(writer);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("the log: the file shrank while it was read"), std::string::npos)
      << s.ToString();
  EXPECT_EQ(blocks, 1u);  // the loss is found in the block that touched it
  EXPECT_GT(sum, 0u);
}

TEST(FileBlocks, AFileTruncatedInTheWindowMappedAheadFailsNamingIt) {
  // The second window (4-8 MiB) is mapped ahead while the first is read:
  // the file is cut in the second window while the first one's last block
  // is read, so the pages it lost were entered ahead (or are being). What
  // lies before the cut arrives whole; the read fails where it meets the
  // loss.
  std::string text = Pattern(20 << 20);
  TempFile file(text);
  int writer = open(file.path().c_str(), O_WRONLY);
  ASSERT_GE(writer, 0);
  const size_t cut = (6 << 20) + 4096;
  std::string got;
  size_t blocks = 0;
  Status s = ReadFileBlocks(file.fd(), "the log", [&](std::string_view block) {
    if (blocks++ == 3) {
      EXPECT_EQ(ftruncate(writer, static_cast<off_t>(cut)), 0);
    }
    got.append(block);
    return Status::Ok();
  });
  close(writer);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("the log: the file shrank while it was read"), std::string::npos)
      << s.ToString();
  ASSERT_GE(got.size(), cut);
  EXPECT_TRUE(got.compare(0, cut, text, 0, cut) == 0);  // nothing lost before the cut
  EXPECT_EQ(MappingsOf(file.path()), 0);
}

TEST(FileBlocks, TheCallersErrorEndsTheRead) {
  TempFile file(Pattern(3 << 20));
  size_t blocks = 0;
  Status s = ReadFileBlocks(file.fd(), "the log", [&](std::string_view) {
    ++blocks;
    return Status::InvalidArgument("the log: not a text log");
  });
  EXPECT_EQ(blocks, 1u);
  EXPECT_EQ(s.ToString().find("not a text log") != std::string::npos, true);
}

TEST(FileBlocks, NoWindowStaysMappedWhenTheCallerStopsMidFile) {
  // The caller stops in the second window, with the third mapped ahead and
  // the first handed back to be unmapped.
  TempFile file(Pattern(14 << 20));
  size_t blocks = 0;
  Status s = ReadFileBlocks(file.fd(), "the log", [&](std::string_view) {
    return ++blocks == 6 ? Status::InvalidArgument("stop") : Status::Ok();
  });
  EXPECT_EQ(blocks, 6u);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(MappingsOf(file.path()), 0);
}

}  // namespace
}  // namespace stallscope
