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

}  // namespace stallscope
