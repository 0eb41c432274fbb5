// Flight Recorder dumps for the tests of `stallscope hang`: those
// bench/gen_fr_dumps.py writes (once per test process, into a temporary
// folder, with expect.json saying what each scenario should be found to be),
// and the real ones read in place from the shared folder beside the checkout
// (or $STALLSCOPE_SHARED): flight-recorder/<incident>/_dump_<rank> with
// fault_injection.log naming the faulty ranks. Outside CI a missing shared
// folder skips a test with a message; in CI (CI=true) it fails it.
// Header-only; for one test binary.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

namespace stallscope {

// The folder gen_fr_dumps.py wrote (removed when the test process ends);
// empty when it failed (the test fails).
inline const std::filesystem::path& GeneratedFrDumps() {
  struct Folder {
    std::filesystem::path path;
    ~Folder() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove_all(path, ec);
    }
  };
  static const Folder dir = [] {
    std::filesystem::path out =
        std::filesystem::temp_directory_path() / ("stallscope-fr-" + std::to_string(getpid()));
    std::filesystem::remove_all(out);
    std::string cmd = "/usr/bin/python3 " + std::string(STALLSCOPE_FIXTURES) +
                      "/../../bench/gen_fr_dumps.py " + out.string();
    if (std::system(cmd.c_str()) == 0) return Folder{out};
    std::filesystem::remove_all(out);
    return Folder{};
  }();
  return dir.path;
}

inline nlohmann::json GeneratedFrExpectations() {
  std::ifstream in(GeneratedFrDumps() / "expect.json");
  return nlohmann::json::parse(in);
}

inline std::filesystem::path SharedFlightRecorder() {
  if (const char* dir = std::getenv("STALLSCOPE_SHARED")) {
    return std::filesystem::path(dir) / "flight-recorder";
  }
  return std::filesystem::path(STALLSCOPE_FIXTURES) / ".." / ".." / ".." / "shared" /
         "flight-recorder";
}

inline bool FrInCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

// The ranks fault_injection.log names ("Fault ranks: [12, 14]").
inline std::set<int64_t> FaultRanks(const std::filesystem::path& incident) {
  std::ifstream in(incident / "fault_injection.log");
  std::string line;
  std::set<int64_t> ranks;
  while (std::getline(in, line)) {
    if (line.rfind("Fault ranks:", 0) != 0) continue;
    std::regex number("\\d+");
    for (auto it = std::sregex_iterator(line.begin(), line.end(), number);
         it != std::sregex_iterator(); ++it) {
      ranks.insert(std::stoll(it->str()));
    }
  }
  return ranks;
}

inline constexpr const char* kFrIncidents[] = {"gpu_error_1st", "gpu_error_2nd", "lock_gil_1st",
                                               "lock_gil_2nd"};

}  // namespace stallscope

// In a TEST body: returns from it (skipped, or failed in CI) when the real
// dumps are not on this machine.
#define STALLSCOPE_REQUIRE_SHARED_FR(root)                                         \
  if (!std::filesystem::exists(root)) {                                            \
    if (::stallscope::FrInCi()) FAIL() << (root) << " is missing";                 \
    GTEST_SKIP() << (root)                                                         \
                 << " is missing: the real Flight Recorder dumps are not on this " \
                    "machine";                                                     \
  }
