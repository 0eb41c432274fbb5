// ProcessPoint in one call, for tests that build timelines by hand: the
// fields every run file has; the run delay and reads stay absent, as in a
// run file older than them. Header-only, inline.
#pragma once

#include <cstdint>
#include <string>

#include "sample/timeline.h"

namespace stallscope {

inline ProcessPoint Point(double t, int pid, int ppid, const char* comm, uint64_t rss, double cpu) {
  ProcessPoint p;
  p.t = t;
  p.pid = pid;
  p.ppid = ppid;
  p.comm = comm;
  p.rss_bytes = rss;
  p.cpu_percent = cpu;
  return p;
}

}  // namespace stallscope
