// The two facts every report header carries about where and when it was made:
// this host's name and the wall-clock time in UTC (ISO 8601, "...Z"). One
// place for both, so every command's header reads the same. Stateless.
#pragma once

#include <ctime>
#include <string>

namespace stallscope {

// gethostname(); empty when the kernel will not say (report headers then
// print no host rather than a made-up one).
std::string HostName();

// A time in seconds since the epoch, as "2026-11-29T18:40:00Z".
std::string UtcTime(std::time_t epoch_seconds);

// Now, as UtcTime formats it.
std::string UtcNow();

}  // namespace stallscope
