// The line scanner (formats/nccl_log/scan.h) against the plain reading it
// replaces (find the newline, then "NCCL", then the bytes to look closer
// at), on lines that start, end and hold their marker on every side of the
// scanner's 64-byte blocks; and the file reader's refusal of binary files
// and its keeping of stray bytes as U+FFFD.
#include "formats/nccl_log/scan.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "formats/nccl_log/nccl_log.h"
#include "render/nccl_log.h"

namespace stallscope {
namespace {

struct Expected {
  std::string text;
  size_t nccl;
  bool plain;
};

std::vector<Expected> PlainReading(std::string_view text) {
  std::vector<Expected> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    lines.push_back({std::string(line), line.find("NCCL"),
                     line.find_first_of("\r\x1b|") == std::string_view::npos});
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  return lines;
}

std::vector<Expected> Scanned(std::string_view text, size_t batch) {
  std::vector<Expected> lines;
  LineScanner scanner(text);
  std::vector<ScannedLine> out(batch);
  while (size_t count = scanner.Next(out.data(), out.size())) {
    EXPECT_LE(count, batch);
    for (size_t i = 0; i < count; ++i) {
      lines.push_back({std::string(out[i].text), out[i].nccl, out[i].plain});
    }
  }
  return lines;
}

void ExpectSameReading(const std::string& text) {
  std::vector<Expected> want = PlainReading(text);
  for (size_t batch : {1, 3, 64}) {
    std::vector<Expected> got = Scanned(text, batch);
    ASSERT_EQ(got.size(), want.size()) << "batch " << batch;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].text, want[i].text) << "line " << i;
      EXPECT_EQ(got[i].nccl, want[i].nccl) << "line " << i << ": " << want[i].text;
      EXPECT_EQ(got[i].plain, want[i].plain) << "line " << i << ": " << want[i].text;
    }
  }
}

TEST(NcclLogScan, MarkersOnEverySideOfABlock) {
  // "NCCL", a near miss and each closer byte at every offset from 0 to 140,
  // in lines of every length around the 64-byte blocks.
  for (const char* needle : {"NCCL", "NCC", "NNCCL", "\r", "\x1b[0m", "|", "N\nCCL"}) {
    for (size_t at = 0; at < 140; at += 1) {
      std::string line(at, 'x');
      line += needle;
      line += " INFO tail";
      ExpectSameReading(line + "\n" + line + "\n");
      ExpectSameReading(line);  // no newline at the end
      ExpectSameReading(std::string(at % 64, '\n') + line + "\nNCCL\n");
    }
  }
}

TEST(NcclLogScan, EmptyLinesAndNoLines) {
  ExpectSameReading("");
  ExpectSameReading("\n");
  ExpectSameReading(std::string(200, '\n'));
  ExpectSameReading("NCCL");
  ExpectSameReading("NCC");
  ExpectSameReading(std::string(63, 'a') + "\n" + std::string(64, 'b') + "\n" +
                    std::string(65, 'N'));
}

TEST(NcclLogScan, RandomText) {
  // Bytes drawn from the few the scanner tells apart.
  const std::string alphabet = "NCL\n\r\x1b| x";
  unsigned state = 12345;
  for (int round = 0; round < 200; ++round) {
    std::string text;
    size_t size = static_cast<size_t>(round) * 7 % 400;
    for (size_t i = 0; i < size; ++i) {
      state = state * 1103515245u + 12345u;
      text += alphabet[(state >> 16) % alphabet.size()];
    }
    ExpectSameReading(text);
  }
}

// A log fed whole says what it says fed in small pieces (lines split
// across Feeds, long lines cut in both).
TEST(NcclLogScan, ALogFedWholeReadsAsOneFedInSmallPieces) {
  std::string log;
  for (int i = 0; log.size() < (size_t{9} << 20); ++i) {
    const int rank = i * 7 % 16;
    const std::string prefix = "2024-03-04 05:06:07.123456 [1," + std::to_string(rank) +
                               "]<stdout>:node" + std::to_string(rank / 8) + ":" +
                               std::to_string(4000 + rank) + ":" + std::to_string(4100 + rank) +
                               " [" + std::to_string(rank % 8) + "] NCCL ";
    switch (i % 6) {
      case 0:
        log += prefix + "INFO Channel 0" + std::to_string(i % 8) + "/0 : " + std::to_string(rank) +
               "[" + std::to_string(rank % 8) + "] -> " + std::to_string((rank + 1) % 16) +
               "[0] via NET/IB/0/GDRDMA\n";
        break;
      case 1:
        log += prefix + "INFO Using network IB\n";
        break;
      case 2:
        log +=
            "[rank" + std::to_string(rank) + "] epoch 0 step " + std::to_string(i) + " loss 2.5\n";
        break;
      case 3:
        log += prefix + "INFO comm 0x55d4c3a00000 rank " + std::to_string(rank) +
               " nranks 16 cudaDev " + std::to_string(rank % 8) + " busId 52000 - Init COMPLETE\n";
        break;
      case 4:
        log += i % 6000 == 4 ? std::string(300000, 'y') + "\n" : "\n";
        break;
      default:
        log += prefix + "WARN Call to connect returned Connection refused, retrying\n";
    }
  }
  NcclLogSummary whole = ParseNcclLog(log);
  NcclLogParser pieces;
  for (size_t at = 0; at < log.size(); at += 4093)
    pieces.Feed(std::string_view(log).substr(at, 4093));
  NcclLogSummary small = pieces.Finish();
  EXPECT_GT(whole.nccl_lines, 40000u);
  EXPECT_GT(whole.dropped, 0u);  // the long lines, cut
  EXPECT_EQ(whole.ranks.size(), 16u);
  EXPECT_EQ(NcclLogToJson("log", whole, ReportHeader{}, Report{}).dump(),
            NcclLogToJson("log", small, ReportHeader{}, Report{}).dump());
}

// A file on disk, read the way nccl-log reads it.
Result<NcclLogSummary> ReadFile(const std::string& bytes, std::string* path) {
  char name[] = "/tmp/nccl_log_scan_test_XXXXXX";
  int fd = mkstemp(name);
  EXPECT_GE(fd, 0);
  *path = name;
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  lseek(fd, 0, SEEK_SET);
  Result<NcclLogSummary> summary = ReadNcclLog(fd, name);
  close(fd);
  unlink(name);
  return summary;
}

TEST(NcclLogRead, ANulByteEarlyIsNotATextLogNamingTheOffset) {
  std::string path;
  const std::string line = "gpu1:1:1 [0] NCCL INFO Using network IB\n";
  Result<NcclLogSummary> summary = ReadFile(line + std::string("\x1f\x8b\x08\x00", 4), &path);
  ASSERT_FALSE(summary.ok());
  const std::string message = summary.status().ToString();
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_NE(message.find("not a text log"), std::string::npos) << message;
  EXPECT_NE(message.find("offset " + std::to_string(line.size() + 3)), std::string::npos)
      << message;
}

TEST(NcclLogRead, ANulByteAfterTheFirst64KiBIsRead) {
  std::string path;
  std::string text;
  while (text.size() < (64 << 10)) text += "gpu1:1:1 [0] NCCL INFO Using network IB\n";
  text += std::string("\0\0", 2) + "\ngpu1:1:1 [0] NCCL INFO Using network IB\n";
  Result<NcclLogSummary> summary = ReadFile(text, &path);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_GT(summary->nccl_lines, 1600u);
}

TEST(NcclLogRead, StrayBytesAreKeptAsReplacementCharacters) {
  std::string path;
  Result<NcclLogSummary> summary = ReadFile(
      "gpu1:1:1 [0] NCCL INFO Bootstrap : Using eth\xfe"
      "0:10.0.0.1<0>\n"
      "gpu1:1:1 [0] NCCL WARN bad \xc3(\n",
      &path);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  ASSERT_EQ(summary->processes.size(), 1u);
  const NcclProcess& process = summary->processes[0];
  ASSERT_EQ(process.bootstrap.size(), 1u);
  EXPECT_EQ(process.bootstrap[0].name,
            "eth\xef\xbf\xbd"
            "0");
  EXPECT_EQ(process.bootstrap[0].address, "10.0.0.1");
  ASSERT_EQ(summary->warnings.size(), 1u);
  EXPECT_EQ(summary->warnings[0].text, "bad \xef\xbf\xbd(");
}

// Inputs the fuzzers found (tests/fixtures/nccl_logs/fuzz_found): a
// launcher prefix with an empty host went into the rank cache, whose copy
// of the host was handed a null pointer; under the sanitizer shards of
// `make test` this read is checked again.
TEST(NcclLogRead, FuzzFoundInputsParse) {
  for (const char* name : {"empty_host_in_rank_cache.log", "empty_host_in_rank_cache_2.log"}) {
    const std::string path = std::string(STALLSCOPE_FIXTURES) + "/nccl_logs/fuzz_found/" + name;
    // As the fuzzers feed it: the text straight to the parser (a file with
    // a NUL early is refused before the parser by ReadNcclLog).
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << path;
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const NcclLogSummary summary = ParseNcclLog(text);
    EXPECT_GT(summary.nccl_lines, 0u) << name;
  }
}

}  // namespace
}  // namespace stallscope
