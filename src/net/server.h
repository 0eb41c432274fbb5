// `stallscope net serve`: the peer that `net probe` measures against.
//
// One TCP listener and one UDP socket on the same address and port. TCP
// connections run one test each (net/protocol.h: info, sink stream, echo);
// UDP datagrams are MTU probes, answered with the size that arrived and the
// MTU of the interface it arrived on. The server answers probes and nothing
// else: it never sends data of its own beyond acknowledgements, it reads
// each connection with a timeout, it caps the connections it serves at
// once (the rest get a "busy" Welcome), and each connection holds one
// fixed buffer, so memory stays bounded whatever peers send. A peer that
// sends garbage or vanishes midway costs its own connection only.
//
// Thread model: Serve() runs in the caller's thread (accept + UDP); each
// accepted connection gets a worker thread, joined before Serve returns.
// The object is movable before Serve and not thread-safe otherwise.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>

#include "core/status.h"
#include "net/admission.h"

namespace stallscope::net {

struct ServeOptions {
  std::string bind = "0.0.0.0";        // an address of this host, IPv4 or IPv6
  uint16_t port = 0;                   // 0: any free port (tests); the CLI passes kDefaultPort
  int max_connections = 16;            // sink/echo tests at once; a probe runs up to --streams
  double idle_timeout_seconds = 10;    // no byte from a peer for this long ends it
  double max_stream_seconds = 60;      // --max-seconds: the longest sink stream accepted
  uint64_t max_stream_bytes = 0;       // --max-bytes: the most one sink stream may send; 0 no cap
  AllowList allow;                     // --allow: who may connect or probe; empty: everyone
  double udp_replies_per_second = 50;  // --udp-rate: MTU acks per source address, also the burst
  std::FILE* log = nullptr;            // one line per connection and per bad datagram
};

class NetServer {
 public:
  // Binds the TCP listener and the UDP socket (same port). Address in use,
  // an address not on this host or a bad --bind are errors naming them.
  static Result<NetServer> Listen(const ServeOptions& options);

  NetServer(NetServer&& other) noexcept;
  NetServer& operator=(NetServer&&) = delete;
  NetServer(const NetServer&) = delete;
  ~NetServer();

  uint16_t port() const { return port_; }
  const std::string& address() const { return options_.bind; }

  // Serves until `stop` becomes true (looked at every 100 ms); then closes
  // every connection and joins its worker.
  Status Serve(const std::atomic<bool>& stop);

 private:
  NetServer() = default;
  ServeOptions options_;
  uint16_t port_ = 0;
  int tcp_ = -1;
  int udp_ = -1;
};

}  // namespace stallscope::net
