// The exporter's two clocks of its own: when the host was last sampled (and
// how late samples came), and how long one read of the host serves the
// scrapes that follow it. Pure bookkeeping over monotonic nanoseconds handed
// in by the caller, so the rules are tested without a clock; the exporter
// command (cli/exporter_command.cc) owns the one instance of each, under its
// state mutex. Thread-compatible.
#pragma once

#include <algorithm>
#include <cstdint>

namespace stallscope {

// The host samples as they were taken: how many, how far apart at worst, and
// how many came more than 1.5 intervals after the one before (a scrape that
// held the state too long, or a starved main thread).
class SampleClock {
 public:
  explicit SampleClock(int64_t interval_ns) : interval_ns_(interval_ns) {}

  void Taken(int64_t now_ns) {
    if (samples_ > 0) {
      const int64_t gap = now_ns - last_ns_;
      longest_gap_ns_ = std::max(longest_gap_ns_, gap);
      if (2 * gap > 3 * interval_ns_) ++late_;
    }
    ++samples_;
    last_ns_ = now_ns;
  }

  uint64_t samples() const { return samples_; }
  uint64_t late() const { return late_; }
  double longest_gap_seconds() const { return static_cast<double>(longest_gap_ns_) / 1e9; }

 private:
  int64_t interval_ns_;
  uint64_t samples_ = 0;
  uint64_t late_ = 0;
  int64_t longest_gap_ns_ = 0;
  int64_t last_ns_ = 0;
};

// One read shared by the reads asked for within `window_ns` after it: under
// a flood of scrapes the host is read a few times a second, not per scrape.
class SharedRead {
 public:
  explicit SharedRead(int64_t window_ns) : window_ns_(window_ns) {}

  // Whether a read asked for at `now_ns` must be made anew.
  bool Stale(int64_t now_ns) const { return !read_ || now_ns - at_ns_ >= window_ns_; }
  void Made(int64_t now_ns) {
    read_ = true;
    at_ns_ = now_ns;
  }

 private:
  int64_t window_ns_;
  bool read_ = false;
  int64_t at_ns_ = 0;
};

}  // namespace stallscope
