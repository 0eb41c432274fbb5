#include "core/byte_size.h"

#include <gtest/gtest.h>

namespace stallscope {
namespace {

TEST(ByteSize, BinaryUnitsAsFio) {
  EXPECT_EQ(ParseByteSize("4096"), 4096u);
  EXPECT_EQ(ParseByteSize("4k"), 4096u);
  EXPECT_EQ(ParseByteSize("4K"), 4096u);
  EXPECT_EQ(ParseByteSize("1M"), 1u << 20);
  EXPECT_EQ(ParseByteSize("20G"), 20ull << 30);
  EXPECT_EQ(ParseByteSize("20GiB"), 20ull << 30);
  EXPECT_EQ(ParseByteSize("20gb"), 20ull << 30);
  EXPECT_EQ(ParseByteSize("2T"), 2ull << 40);
  EXPECT_EQ(ParseByteSize("1.5G"), 3ull << 29);
  EXPECT_EQ(ParseByteSize(" 512 MiB "), 512ull << 20);
  EXPECT_EQ(ParseByteSize("0"), 0u);
  EXPECT_EQ(ParseByteSize("7B"), 7u);
}

TEST(ByteSize, RejectsWhatIsNotASize) {
  for (const char* bad : {"", "G", "-1G", "12X", "1.5", "1..5G", "5Gx", "5GiBB", "5bx", "1e9", ".",
                          "M5", "99999999999999999999", "20000000P"}) {
    EXPECT_FALSE(ParseByteSize(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace stallscope
