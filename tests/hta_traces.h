// HTA's test traces, read in place from the shared folder beside the
// checkout (or $STALLSCOPE_SHARED), for the tests that compare stallscope's
// figures with HTA's own: outside CI a missing folder skips the test with a
// message; in CI (CI=true) it fails it. Also HTA's figures as the bench
// scripts wrote them (fixtures/traces/hta_*reference.json) and the loop over
// every rank's trace of every folder a reference names.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "formats/trace/file.h"

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

// HTA's figures in fixtures/traces/`file` (hta_queue_reference.json, ...).
inline nlohmann::json HtaReference(const std::string& file) {
  std::ifstream in(std::string(STALLSCOPE_FIXTURES) + "/traces/" + file);
  return nlohmann::json::parse(in);
}

// Reads each rank's file in every folder of `traces` (a reference's
// "traces": folder -> HTA's figures) where HTA did not fail (no "error"),
// and calls each(folder, figures, trace, rank), the rank as the
// reference's key ("0" when the trace names none). A file that does not
// read fails the test.
template <typename Each>
void ForEachHtaTrace(const std::filesystem::path& root, const nlohmann::json& traces, Each each) {
  for (const auto& [dir, figures] : traces.items()) {
    if (figures.contains("error")) continue;
    for (const auto& entry : std::filesystem::directory_iterator(root / dir)) {
      if (!entry.is_regular_file()) continue;
      Result<TraceFile> trace = ReadTraceFile(entry.path().string());
      ASSERT_TRUE(trace.ok()) << entry.path() << ": " << trace.status().message();
      each(dir, figures, trace.value(), std::to_string(trace.value().rank.value_or(0)));
    }
  }
}

}  // namespace stallscope

// In a TEST body: returns from it (skipped, or failed in CI) when `root`
// is missing.
#define STALLSCOPE_REQUIRE_SHARED_TRACES(root)                                          \
  if (!std::filesystem::exists(root)) {                                                 \
    if (::stallscope::InCi()) FAIL() << (root) << " is missing";                        \
    GTEST_SKIP() << (root) << " is missing: HTA's test traces are not on this machine"; \
  }
