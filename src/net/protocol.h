// The wire protocol of `stallscope net serve` / `net probe`, version 1
// (documented for other implementers in docs/net-protocol.md).
//
// Library code for the network probe lives in src/net/ rather than
// src/bench/net_*: it is a client *and* a long-running server with its own
// wire format, and doctor reuses its route lookup (net/route.h), so it is a
// module of its own, not one more benchmark.
//
// Every message, on TCP and UDP alike, is an 8-byte header and a body:
//   magic "SSNP" (4 bytes) | version (1) | type (1) | body length (2, big-endian)
// then the body, whose fields are big-endian integers and length-prefixed
// strings. A UDP MTU probe may carry padding after its body (that is how
// it reaches a given size); nothing else may. Encode and Parse are pure and
// bounded: a body is at most kMaxBodyBytes, strings are capped, and every
// malformed input is a ParseError naming what is wrong. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "core/status.h"

namespace stallscope::net {

inline constexpr uint8_t kMagic[4] = {'S', 'S', 'N', 'P'};
inline constexpr uint8_t kProtocolVersion = 1;
inline constexpr size_t kHeaderBytes = 8;
inline constexpr size_t kMaxBodyBytes = 512;
inline constexpr size_t kMaxInterfaceNameBytes = 15;  // IFNAMSIZ - 1
inline constexpr size_t kMaxErrorTextBytes = 256;
inline constexpr uint16_t kDefaultPort = 9309;
// The largest MtuAck: header, four u32 and the longest interface name.
inline constexpr size_t kMaxMtuAckBytes = kHeaderBytes + 16 + 1 + kMaxInterfaceNameBytes;
// The smallest MtuProbe datagram net serve answers. A bare probe is 16
// bytes and its ack up to 40: answering it would send back 2.5 times what
// arrived, which makes the server an amplifier for spoofed sources. A
// probe must be at least as large as the largest ack, so an answer never
// exceeds its question; 64 keeps that margin should the ack grow and is
// far below any MTU (IPv4 guarantees 576, IPv6 1280), so it costs the
// path-MTU search nothing.
inline constexpr size_t kMinMtuProbeBytes = 64;
static_assert(kMaxMtuAckBytes <= kMinMtuProbeBytes);

enum class MessageType : uint8_t {
  kHello = 1,       // client -> server (TCP): which test this connection runs
  kWelcome = 2,     // server -> client (TCP): accepted or not, server's MTU
  kSinkResult = 3,  // server -> client (TCP): bytes a sink stream received
  kPing = 4,        // client -> server (TCP echo)
  kPong = 5,        // server -> client (TCP echo), the ping's fields back
  kMtuProbe = 6,    // client -> server (UDP), padded to the size under test
  kMtuAck = 7,      // server -> client (UDP): the size that arrived
  kError = 8,       // server -> client (TCP): why the connection ends
};

enum class TestMode : uint8_t {
  kInfo = 1,  // only the Welcome (MTU and interface of the server)
  kSink = 2,  // the client streams raw bytes until it shuts down its side
  kEcho = 3,  // Ping/Pong round trips
};

enum class WelcomeStatus : uint8_t { kOk = 0, kBusy = 1, kBadRequest = 2 };

struct Hello {
  TestMode mode = TestMode::kInfo;
  uint32_t duration_ms = 0;  // how long a sink stream will send
};
struct Welcome {
  WelcomeStatus status = WelcomeStatus::kOk;
  uint32_t mtu = 0;              // MTU of the server's interface for this connection; 0 unknown
  uint32_t max_duration_ms = 0;  // the longest stream the server accepts
  std::string interface;         // its name; empty when unknown
};
struct SinkResult {
  uint64_t bytes = 0;        // received on the stream
  uint64_t nanoseconds = 0;  // from the first to the last byte
};
struct Ping {
  uint64_t sequence = 0;
  uint64_t timestamp_ns = 0;  // the client's clock; the server only echoes it
};
struct Pong {
  uint64_t sequence = 0;
  uint64_t timestamp_ns = 0;
};
struct MtuProbe {
  uint32_t sequence = 0;
  uint32_t token = 0;  // the client's session id: stale acks are recognised
};
struct MtuAck {
  uint32_t sequence = 0;
  uint32_t token = 0;
  uint32_t received_bytes = 0;  // UDP payload that arrived, padding included
  uint32_t mtu = 0;             // MTU of the interface it arrived on; 0 unknown
  std::string interface;
};
struct ErrorMessage {
  std::string text;
};

using Message =
    std::variant<Hello, Welcome, SinkResult, Ping, Pong, MtuProbe, MtuAck, ErrorMessage>;

struct Header {
  MessageType type = MessageType::kHello;
  uint16_t body_bytes = 0;
};

// The 8 header bytes: magic, version, a known type, a body within bounds.
Result<Header> ParseHeader(std::span<const uint8_t> bytes);

// A whole message. Bytes after the body are an error except for an
// MtuProbe when allow_padding (a UDP datagram).
Result<Message> ParseMessage(std::span<const uint8_t> bytes, bool allow_padding = false);

// The message's bytes; strings longer than their caps are cut to them.
std::vector<uint8_t> Encode(const Message& message);

// An MtuProbe padded so that the datagram's UDP payload is `payload_bytes`
// (at least the probe's own size).
std::vector<uint8_t> EncodeMtuProbe(const MtuProbe& probe, size_t payload_bytes);

const char* MessageTypeName(MessageType type);

}  // namespace stallscope::net
