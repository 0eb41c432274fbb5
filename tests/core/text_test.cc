#include "core/text.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "core/file.h"

namespace stallscope {
namespace {

TEST(Root, JoinsUnderTheRoot) {
  EXPECT_EQ(Root("/").Path("/proc/meminfo"), "/proc/meminfo");
  EXPECT_EQ(Root("/tmp/fx/").Path("/proc/meminfo"), "/tmp/fx/proc/meminfo");
  EXPECT_TRUE(Root().IsLive());
  EXPECT_FALSE(Root("/tmp/fx").IsLive());
}

TEST(ReadFile, ReadsProcfsFilesThatReportSizeZero) {
  Result<std::string> text = ReadFile("/proc/self/status");
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_NE(text->find("Name:"), std::string::npos);
}

TEST(ReadFile, MissingFileNamesThePath) {
  Result<std::string> text = ReadFile("/nonexistent/stallscope");
  ASSERT_FALSE(text.ok());
  EXPECT_TRUE(text.status().IsNotFound());
  EXPECT_NE(text.status().message().find("/nonexistent/stallscope"), std::string::npos);
}

TEST(ReadFile, RefusesToTruncateSilently) {
  std::string path = ::testing::TempDir() + "/big";
  std::ofstream(path) << std::string(5000, 'x');
  Result<std::string> text = ReadFile(path, 4096);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), Status::Code::kParseError);
  ::unlink(path.c_str());
}

TEST(Split, FieldsAndLines) {
  auto fields = SplitFields("  8  0 sda\t12 ");
  ASSERT_EQ(fields.size(), 4u);
  EXPECT_EQ(fields[2], "sda");
  auto lines = SplitLines("a\nb\n\nc");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[2], "");
  EXPECT_EQ(lines[3], "c");
}

TEST(Split, FieldsIntoAFixedArrayCountsThemAll) {
  std::string_view out[3];
  EXPECT_EQ(SplitFieldsInto("  8  0 sda\t12 ", out), 4u);
  EXPECT_EQ(out[0], "8");
  EXPECT_EQ(out[2], "sda");  // the 4th is counted, not stored
  EXPECT_EQ(SplitFieldsInto(" \t ", out), 0u);
  EXPECT_EQ(SplitFieldsInto("pgfault 42", std::span<std::string_view>()), 2u);
}

TEST(Parse, NumbersRejectJunk) {
  EXPECT_EQ(ParseUint("123"), 123u);
  EXPECT_EQ(ParseUint(" 7 "), 7u);
  EXPECT_FALSE(ParseUint("12a").has_value());
  EXPECT_FALSE(ParseUint("").has_value());
  EXPECT_FALSE(ParseUint("-1").has_value());
  EXPECT_FALSE(ParseUint("99999999999999999999999").has_value());
  EXPECT_EQ(ParseInt("-1"), -1);
  EXPECT_DOUBLE_EQ(*ParseDouble("0.25"), 0.25);
}

}  // namespace
}  // namespace stallscope
