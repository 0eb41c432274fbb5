#include "core/host_clock.h"

#include <time.h>
#include <unistd.h>

namespace stallscope {

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

std::string UtcTime(std::time_t epoch_seconds) {
  struct tm tm {};
  ::gmtime_r(&epoch_seconds, &tm);
  char text[32];
  ::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string UtcNow() { return UtcTime(::time(nullptr)); }

int64_t MonotonicNs() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

double MonotonicSeconds() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

int64_t RealtimeNs() {
  struct timespec ts {};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

double RealtimeSeconds() { return static_cast<double>(RealtimeNs()) / 1e9; }

}  // namespace stallscope
