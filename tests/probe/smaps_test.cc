// The area of /proc/self/smaps that holds an address, and the THP mode's
// bracketed word; on text in the kernel's own layout (fixture) and on the
// live process.
#include "probe/smaps.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <string>

#include "core/file.h"

namespace stallscope {
namespace {

std::string Fixture() {
  Result<std::string> text = ReadFile(std::string(STALLSCOPE_FIXTURES) + "/bench_io/smaps");
  EXPECT_TRUE(text.ok()) << text.status().message();
  return text.ok() ? *text : "";
}

TEST(Smaps, TheAreaHoldingTheAddressWithItsHugePages) {
  // The fixture's second area: a 4 MiB read buffer, 2 MiB-aligned, its
  // first 2 MiB in a huge page.
  Result<SmapsArea> area = ParseSmapsAreaAt(Fixture(), 0x7f3c6a400000 + 100, "smaps");
  ASSERT_TRUE(area.ok()) << area.status().message();
  EXPECT_EQ(area->start, 0x7f3c6a400000u);
  EXPECT_EQ(area->end, 0x7f3c6a800000u);
  EXPECT_EQ(area->rss_bytes, 4096u * 1024);
  EXPECT_EQ(area->anon_huge_pages_bytes, 2048u * 1024);
  // The area before it ends where this one starts: [start, end).
  Result<SmapsArea> before = ParseSmapsAreaAt(Fixture(), 0x7f3c6a3fffff, "smaps");
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->anon_huge_pages_bytes, 0u);
  EXPECT_EQ(before->end, 0x7f3c6a400000u);
}

TEST(Smaps, AnAddressNoAreaHoldsIsNotFoundAndABadSizeNamesTheLine) {
  Result<SmapsArea> none = ParseSmapsAreaAt(Fixture(), 0x1000, "smaps");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), Status::Code::kNotFound);
  EXPECT_NE(none.status().message().find("0x1000"), std::string::npos);
  Result<SmapsArea> bad = ParseSmapsAreaAt(
      "7f0000000000-7f0000200000 rw-p 00000000 00:00 0\nRss:  12 kB\nAnonHugePages: lots\n",
      0x7f0000000010, "/proc/self/smaps");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/proc/self/smaps: line 3"), std::string::npos)
      << bad.status().message();
  // A size in another area is not this area's business.
  Result<SmapsArea> other = ParseSmapsAreaAt(
      "10000-20000 r-xp 0 0:0 0\nRss: x kB\n7f0000000000-7f0000200000 rw-p 0 00:00 0\nRss: 8 kB\n",
      0x7f0000000010, "smaps");
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_EQ(other->rss_bytes, 8u * 1024);
}

TEST(Smaps, TheLiveAreaOfAnAllocationHoldsItsPages) {
  const size_t bytes = 4 << 20;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::memset(p, 1, bytes);
  Result<SmapsArea> area = ReadOwnSmapsAreaAt(reinterpret_cast<uintptr_t>(p) + 12345);
  ASSERT_TRUE(area.ok()) << area.status().message();
  EXPECT_LE(area->start, reinterpret_cast<uintptr_t>(p));
  EXPECT_GE(area->end, reinterpret_cast<uintptr_t>(p) + bytes);
  EXPECT_GE(area->rss_bytes, bytes);  // touched: resident (the area may be wider)
  munmap(p, bytes);
}

TEST(ThpMode, TheBracketedWord) {
  EXPECT_EQ(ParseThpMode("always [madvise] never\n"), "madvise");
  EXPECT_EQ(ParseThpMode("[always] madvise never"), "always");
  EXPECT_EQ(ParseThpMode("always madvise [never]"), "never");
  EXPECT_EQ(ParseThpMode("always madvise never"), "");
  EXPECT_EQ(ParseThpMode("[unterminated"), "");
}

}  // namespace
}  // namespace stallscope
