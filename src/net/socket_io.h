// Blocking socket reads and writes with a deadline, for the net server and
// client: every wait is a poll() bounded by the deadline, so a silent or
// stalled peer costs at most the timeout, never a hung thread. Framing of
// protocol messages (net/protocol.h) on a stream socket. Stateless;
// thread-safe (each call works on the descriptor it is given).
#pragma once

#include <cstdint>
#include <span>

#include "core/host_clock.h"  // MonotonicNs
#include "core/status.h"
#include "net/protocol.h"

namespace stallscope::net {

inline int64_t DeadlineIn(double seconds) {
  return MonotonicNs() + static_cast<int64_t>(seconds * 1e9);
}

// Waits until `fd` is readable (POLLIN) or writable; Unavailable naming
// `what` when the deadline passes first.
Status WaitFor(int fd, short events, int64_t deadline_ns, const char* what);

// All of `bytes`, or an error (timeout, reset, closed).
Status WriteAll(int fd, std::span<const uint8_t> bytes, int64_t deadline_ns);
// Exactly bytes.size() bytes. A peer that closes before the first byte is
// NotFound ("closed"); one that closes midway is Unavailable.
Status ReadExact(int fd, std::span<uint8_t> bytes, int64_t deadline_ns);

// One framed message: the header, then its body (at most kMaxBodyBytes).
Result<Message> ReadMessage(int fd, int64_t deadline_ns);
Status WriteMessage(int fd, const Message& message, int64_t deadline_ns);

}  // namespace stallscope::net
