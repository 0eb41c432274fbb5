// The request side of our small HTTP/1.1 server: a pure, incremental parser
// of a request's head (request line and headers), and of the --listen
// address. No I/O; thread-safe.
//
// The exporter only answers GET /metrics, so the parser reads no body: it
// stops at the blank line that ends the head and the server closes the
// connection after one answer. It is strict where strictness protects the
// server (RFC 9112): the head has a size bound, a request line is METHOD SP
// TARGET SP HTTP/1.x, header names are tokens, obsolete line folding and
// control characters are refused. Bare LF line ends are accepted (the RFC
// allows it) and empty lines before the request line are skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace stallscope {

struct HttpRequestHead {
  std::string method;  // "GET"
  std::string target;  // as sent: "/metrics?x=1"
  std::string path;    // the target's path: "/metrics"
  int minor_version = 1;
  size_t head_bytes = 0;  // bytes of the buffer the head used
};

struct HttpParseResult {
  enum class State { kIncomplete, kComplete, kError };
  State state = State::kIncomplete;
  HttpRequestHead head;  // when complete
  int status = 0;        // when an error: the status to answer (400, 431, 501, 505)
  std::string reason;    // when an error: what was wrong, for the body
};

// Parses the head at the start of `buffer`. Incomplete while the blank line
// is still to come and the buffer is under max_head_bytes; an error as soon
// as what is there can no longer become a valid head.
HttpParseResult ParseHttpRequestHead(std::string_view buffer, size_t max_head_bytes);

// --listen HOST:PORT: an IPv4 literal, [IPv6 literal] or "localhost"; PORT
// 0..65535 (0: the kernel picks one).
struct ListenAddress {
  std::string host;  // literal, without brackets
  uint16_t port = 0;
  bool ipv6 = false;
  bool loopback = false;  // 127.0.0.0/8 or ::1
};
Result<ListenAddress> ParseListenAddress(std::string_view text);

}  // namespace stallscope
