#include "core/host_clock.h"

#include <time.h>
#include <unistd.h>

namespace stallscope {

std::string HostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

std::string UtcNow() {
  time_t now = ::time(nullptr);
  struct tm tm {};
  ::gmtime_r(&now, &tm);
  char text[32];
  ::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace stallscope
