#include "core/status.h"

#include <gtest/gtest.h>

namespace stallscope {
namespace {

TEST(Status, ErrnoNamesTheThingAndMapsCodes) {
  Status s = Status::FromErrno("/proc/meminfo", ENOENT);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.IsNotFound());
  EXPECT_EQ(s.message(), "/proc/meminfo: No such file or directory");
  EXPECT_EQ(Status::FromErrno("/proc/1/io", EACCES).code(), Status::Code::kPermissionDenied);
  EXPECT_EQ(Status::FromErrno("x", EIO).code(), Status::Code::kIoError);
}

TEST(Status, ParseErrorCarriesFileAndLine) {
  Status s = Status::ParseError("/proc/diskstats", 7, "expected 14 fields, got 3");
  EXPECT_EQ(s.code(), Status::Code::kParseError);
  EXPECT_EQ(s.message(), "/proc/diskstats:7: expected 14 fields, got 3");
  EXPECT_EQ(Status::ParseError("f", 0, "empty").message(), "f: empty");
}

TEST(Result, HoldsValueOrStatus) {
  Result<int> good = 42;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 42);
  EXPECT_TRUE(good.status().ok());
  Result<int> bad = Status::NotFound("pid 7");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "pid 7");
}

}  // namespace
}  // namespace stallscope
