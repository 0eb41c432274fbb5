// How far this host's wall clock is from node rank 0's, for the run files
// of a job that spans nodes: node 0's `stallscope run` answers clock pings
// on UDP at MASTER_PORT (torch's rendezvous is TCP on that port, so the UDP
// port is free), and every other node's asks it a few rounds and keeps the
// round with the shortest round trip: offset = (sent + received) / 2 -
// node 0's reading (NTP's estimate; its error is at most half the round
// trip). The report subtracts the offset, so the nodes' timelines align.
//
// Datagrams: 16 bytes out ("SSCK", a sequence number, the sender's
// CLOCK_REALTIME in ns), 24 back (the same and node 0's reading). Anything
// else is ignored. Not thread-safe; one owner (the recorder loop).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"

namespace stallscope {

// Node 0's side: a UDP socket on `port` (all addresses) that Answer() serves.
class ClockServer {
 public:
  static Result<ClockServer> Open(int port);
  ClockServer(ClockServer&& other) noexcept;
  ClockServer& operator=(ClockServer&& other) noexcept;
  ClockServer(const ClockServer&) = delete;
  ClockServer& operator=(const ClockServer&) = delete;
  ~ClockServer();

  int fd() const { return fd_; }
  // Answers every ping waiting, without blocking; returns how many.
  int Answer();

 private:
  explicit ClockServer(int fd) : fd_(fd) {}
  int fd_ = -1;
};

struct ClockOffsetEstimate {
  double offset_seconds = 0;      // this host minus the server
  double round_trip_seconds = 0;  // of the round kept
};

// Up to `rounds` pings to host:port, each waiting at most `timeout_ms`;
// nullopt when none was answered (node 0 not up yet, a firewall), or an
// error when the host does not resolve or no socket can be made.
Result<std::optional<ClockOffsetEstimate>> MeasureClockOffset(const std::string& host, int port,
                                                              int rounds, int timeout_ms);

}  // namespace stallscope
