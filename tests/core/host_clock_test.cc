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

TEST(HostClock, HostNameIsTheKernels) {
  char name[256] = {};
  ASSERT_EQ(::gethostname(name, sizeof(name) - 1), 0);
  EXPECT_EQ(HostName(), name);
}

}  // namespace
}  // namespace stallscope
