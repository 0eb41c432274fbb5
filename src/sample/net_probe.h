// What `net probe` measured against a `net serve` peer, as plain data: the
// route and MTUs at both ends, TCP round-trip latency, single- and
// multi-stream TCP throughput, and the UDP path MTU. net/client.h
// (RunProbe) builds it; render/net_probe.h renders it and feeds
// analyze/host/network_rules.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace stallscope::net {

struct ThroughputResult {
  int streams = 0;
  uint64_t bytes = 0;  // acknowledged by the server, all streams
  double seconds = 0;  // the longest stream, start to acknowledgement
  double bits_per_second = 0;
};

struct LatencyResult {
  int samples = 0;
  double min_us = 0;
  double p50_us = 0;
  double p99_us = 0;
  double max_us = 0;
};

struct PathMtuResult {
  bool measured = false;               // false: UDP probes got no answer at all
  uint64_t largest_payload = 0;        // UDP payload bytes acknowledged with DF set
  uint64_t path_mtu = 0;               // largest_payload + IP and UDP headers
  std::optional<uint64_t> kernel_mtu;  // IP_MTU of the connected socket
  int probes = 0;                      // datagrams sent
  std::string note;                    // why it is not measured, when not
};

struct ProbeResult {
  std::string host;     // as given
  std::string address;  // resolved
  uint16_t port = 0;
  std::string local_address;
  std::string local_interface;
  std::optional<uint64_t> local_mtu;
  std::string peer_interface;
  std::optional<uint64_t> peer_mtu;
  LatencyResult latency;
  std::optional<ThroughputResult> single;
  std::optional<ThroughputResult> parallel;
  PathMtuResult mtu;
};

}  // namespace stallscope::net
