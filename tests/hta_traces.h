// HTA's test traces, read in place from the shared folder beside the
// checkout (or $STALLSCOPE_SHARED), for the tests that compare stallscope's
// figures with HTA's own: outside CI a missing folder skips the test with a
// message; in CI (CI=true) it fails it.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace stallscope {

inline std::filesystem::path SharedTraces() {
  if (const char* dir = std::getenv("STALLSCOPE_SHARED")) {
    return std::filesystem::path(dir) / "traces" / "hta";
  }
  return std::filesystem::path(STALLSCOPE_FIXTURES) / ".." / ".." / ".." / "shared" / "traces" /
         "hta";
}

inline bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

}  // namespace stallscope

// In a TEST body: returns from it (skipped, or failed in CI) when `root`
// is missing.
#define STALLSCOPE_REQUIRE_SHARED_TRACES(root)                                          \
  if (!std::filesystem::exists(root)) {                                                 \
    if (::stallscope::InCi()) FAIL() << (root) << " is missing";                        \
    GTEST_SKIP() << (root) << " is missing: HTA's test traces are not on this machine"; \
  }
