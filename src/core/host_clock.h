// Where and when: this host's name and the wall-clock time in UTC (ISO 8601,
// "...Z") that every report header carries, and the monotonic clock that
// intervals, deadlines and rates are measured on. One place for each, so
// every command's header reads the same and no file keeps its own copy.
// Stateless.
#pragma once

#include <cstdint>
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

// CLOCK_MONOTONIC, in nanoseconds and in seconds: only differences mean
// anything.
int64_t MonotonicNs();
double MonotonicSeconds();

// CLOCK_REALTIME: wall time, in nanoseconds and seconds since the epoch.
int64_t RealtimeNs();
double RealtimeSeconds();

}  // namespace stallscope
