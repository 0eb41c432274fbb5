#include "core/host_clock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>

namespace stallscope {
namespace {

TEST(HostClock, UtcNowIsIso8601InUtc) {
  EXPECT_TRUE(std::regex_match(UtcNow(), std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << UtcNow();
}

TEST(HostClock, UtcTimeOfKnownInstants) {
  EXPECT_EQ(UtcTime(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(UtcTime(1796000000), "2026-11-30T00:53:20Z");  // date -u -d @1796000000
  EXPECT_EQ(UtcTime(951782400), "2000-02-29T00:00:00Z");   // a leap day
}

TEST(HostClock, HostNameIsTheKernels) {
  char name[256] = {};
  ASSERT_EQ(::gethostname(name, sizeof(name) - 1), 0);
  EXPECT_EQ(HostName(), name);
}

}  // namespace
}  // namespace stallscope
