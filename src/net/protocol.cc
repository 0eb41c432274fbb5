#include "net/protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace stallscope::net {
namespace {

constexpr std::string_view kSource = "net message";

class Writer {
 public:
  void U8(uint8_t v) { bytes_.push_back(v); }
  void U16(uint16_t v) {
    U8(static_cast<uint8_t>(v >> 8));
    U8(static_cast<uint8_t>(v));
  }
  void U32(uint32_t v) {
    U16(static_cast<uint16_t>(v >> 16));
    U16(static_cast<uint16_t>(v));
  }
  void U64(uint64_t v) {
    U32(static_cast<uint32_t>(v >> 32));
    U32(static_cast<uint32_t>(v));
  }
  // One length byte (or two when `wide`), then the text cut to `cap`.
  void String(const std::string& text, size_t cap, bool wide) {
    size_t n = std::min(text.size(), cap);
    if (wide) {
      U16(static_cast<uint16_t>(n));
    } else {
      U8(static_cast<uint8_t>(n));
    }
    bytes_.insert(bytes_.end(), text.begin(), text.begin() + static_cast<std::ptrdiff_t>(n));
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// Reads a body; every read past the end sets failed() and yields 0.
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  uint8_t U8() {
    if (at_ + 1 > bytes_.size()) return Fail();
    return bytes_[at_++];
  }
  uint16_t U16() { return static_cast<uint16_t>((U8() << 8) | U8()); }
  uint32_t U32() {
    uint32_t high = U16();
    return (high << 16) | U16();
  }
  uint64_t U64() {
    uint64_t high = U32();
    return (high << 32) | U32();
  }
  std::string String(size_t cap, bool wide, const char* what) {
    size_t n = wide ? U16() : U8();
    if (failed_) return "";
    if (n > cap) {
      too_long_ = fmt::format("{} of {} bytes exceeds {}", what, n, cap);
      failed_ = true;
      return "";
    }
    if (at_ + n > bytes_.size()) {
      Fail();
      return "";
    }
    std::string out(reinterpret_cast<const char*>(bytes_.data() + at_), n);
    at_ += n;
    return out;
  }
  bool failed() const { return failed_; }
  const std::string& too_long() const { return too_long_; }
  size_t left() const { return bytes_.size() - at_; }

 private:
  uint8_t Fail() {
    failed_ = true;
    return 0;
  }
  std::span<const uint8_t> bytes_;
  size_t at_ = 0;
  bool failed_ = false;
  std::string too_long_;
};

MessageType TypeOf(const Message& m) {
  return std::visit(
      [](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Hello>) return MessageType::kHello;
        if constexpr (std::is_same_v<T, Welcome>) return MessageType::kWelcome;
        if constexpr (std::is_same_v<T, SinkResult>) return MessageType::kSinkResult;
        if constexpr (std::is_same_v<T, Ping>) return MessageType::kPing;
        if constexpr (std::is_same_v<T, Pong>) return MessageType::kPong;
        if constexpr (std::is_same_v<T, MtuProbe>) return MessageType::kMtuProbe;
        if constexpr (std::is_same_v<T, MtuAck>) return MessageType::kMtuAck;
        return MessageType::kError;
      },
      m);
}

void EncodeBody(const Message& m, Writer& w) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Hello>) {
          w.U8(static_cast<uint8_t>(v.mode));
          w.U8(0);
          w.U16(0);
          w.U32(v.duration_ms);
        } else if constexpr (std::is_same_v<T, Welcome>) {
          w.U8(static_cast<uint8_t>(v.status));
          w.U8(0);
          w.U16(0);
          w.U32(v.mtu);
          w.U32(v.max_duration_ms);
          w.String(v.interface, kMaxInterfaceNameBytes, false);
        } else if constexpr (std::is_same_v<T, SinkResult>) {
          w.U64(v.bytes);
          w.U64(v.nanoseconds);
        } else if constexpr (std::is_same_v<T, Ping> || std::is_same_v<T, Pong>) {
          w.U64(v.sequence);
          w.U64(v.timestamp_ns);
        } else if constexpr (std::is_same_v<T, MtuProbe>) {
          w.U32(v.sequence);
          w.U32(v.token);
        } else if constexpr (std::is_same_v<T, MtuAck>) {
          w.U32(v.sequence);
          w.U32(v.token);
          w.U32(v.received_bytes);
          w.U32(v.mtu);
          w.String(v.interface, kMaxInterfaceNameBytes, false);
        } else {
          w.String(v.text, kMaxErrorTextBytes, true);
        }
      },
      m);
}

Status Bad(std::string what) { return Status::ParseError(kSource, 0, what); }

}  // namespace

const char* MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kHello:
      return "Hello";
    case MessageType::kWelcome:
      return "Welcome";
    case MessageType::kSinkResult:
      return "SinkResult";
    case MessageType::kPing:
      return "Ping";
    case MessageType::kPong:
      return "Pong";
    case MessageType::kMtuProbe:
      return "MtuProbe";
    case MessageType::kMtuAck:
      return "MtuAck";
    case MessageType::kError:
      return "Error";
  }
  return "unknown";
}

Result<Header> ParseHeader(std::span<const uint8_t> bytes) {
  if (bytes.size() < kHeaderBytes) {
    return Bad(
        fmt::format("{} bytes, shorter than the {}-byte header", bytes.size(), kHeaderBytes));
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return Bad("bad magic (not a stallscope net peer)");
  }
  if (bytes[4] != kProtocolVersion) {
    return Bad(fmt::format("protocol version {} (this stallscope speaks version {})", bytes[4],
                           kProtocolVersion));
  }
  uint8_t type = bytes[5];
  if (type < static_cast<uint8_t>(MessageType::kHello) ||
      type > static_cast<uint8_t>(MessageType::kError)) {
    return Bad(fmt::format("unknown message type {}", type));
  }
  Header h;
  h.type = static_cast<MessageType>(type);
  h.body_bytes = static_cast<uint16_t>((bytes[6] << 8) | bytes[7]);
  if (h.body_bytes > kMaxBodyBytes) {
    return Bad(fmt::format("{} body of {} bytes exceeds {}", MessageTypeName(h.type), h.body_bytes,
                           kMaxBodyBytes));
  }
  return h;
}

Result<Message> ParseMessage(std::span<const uint8_t> bytes, bool allow_padding) {
  Result<Header> header = ParseHeader(bytes);
  if (!header.ok()) return header.status();
  if (bytes.size() < kHeaderBytes + header->body_bytes) {
    return Bad(fmt::format("{} body cut short: {} of {} bytes", MessageTypeName(header->type),
                           bytes.size() - kHeaderBytes, header->body_bytes));
  }
  Reader r(bytes.subspan(kHeaderBytes, header->body_bytes));
  Message out;
  switch (header->type) {
    case MessageType::kHello: {
      Hello h;
      uint8_t mode = r.U8();
      r.U8();
      r.U16();
      h.duration_ms = r.U32();
      if (!r.failed() && (mode < 1 || mode > 3))
        return Bad(fmt::format("unknown test mode {}", mode));
      h.mode = static_cast<TestMode>(mode);
      out = h;
      break;
    }
    case MessageType::kWelcome: {
      Welcome w;
      uint8_t status = r.U8();
      r.U8();
      r.U16();
      w.mtu = r.U32();
      w.max_duration_ms = r.U32();
      w.interface = r.String(kMaxInterfaceNameBytes, false, "interface name");
      if (!r.failed() && status > 2) return Bad(fmt::format("unknown welcome status {}", status));
      w.status = static_cast<WelcomeStatus>(status);
      out = w;
      break;
    }
    case MessageType::kSinkResult: {
      SinkResult s;
      s.bytes = r.U64();
      s.nanoseconds = r.U64();
      out = s;
      break;
    }
    case MessageType::kPing: {
      Ping p;
      p.sequence = r.U64();
      p.timestamp_ns = r.U64();
      out = p;
      break;
    }
    case MessageType::kPong: {
      Pong p;
      p.sequence = r.U64();
      p.timestamp_ns = r.U64();
      out = p;
      break;
    }
    case MessageType::kMtuProbe: {
      MtuProbe p;
      p.sequence = r.U32();
      p.token = r.U32();
      out = p;
      break;
    }
    case MessageType::kMtuAck: {
      MtuAck a;
      a.sequence = r.U32();
      a.token = r.U32();
      a.received_bytes = r.U32();
      a.mtu = r.U32();
      a.interface = r.String(kMaxInterfaceNameBytes, false, "interface name");
      out = a;
      break;
    }
    case MessageType::kError: {
      ErrorMessage e;
      e.text = r.String(kMaxErrorTextBytes, true, "error text");
      out = e;
      break;
    }
  }
  if (r.failed()) {
    if (!r.too_long().empty()) return Bad(r.too_long());
    return Bad(fmt::format("{} body of {} bytes is too short for its fields",
                           MessageTypeName(header->type), header->body_bytes));
  }
  if (r.left() != 0) {
    return Bad(fmt::format("{} body has {} bytes after its fields", MessageTypeName(header->type),
                           r.left()));
  }
  size_t trailing = bytes.size() - kHeaderBytes - header->body_bytes;
  if (trailing != 0 && !(allow_padding && header->type == MessageType::kMtuProbe)) {
    return Bad(
        fmt::format("{} bytes after the {} message", trailing, MessageTypeName(header->type)));
  }
  return out;
}

std::vector<uint8_t> Encode(const Message& message) {
  Writer body;
  EncodeBody(message, body);
  Writer w;
  for (uint8_t b : kMagic) w.U8(b);
  w.U8(kProtocolVersion);
  w.U8(static_cast<uint8_t>(TypeOf(message)));
  w.U16(static_cast<uint16_t>(body.bytes().size()));
  std::vector<uint8_t> out = std::move(w.bytes());
  out.insert(out.end(), body.bytes().begin(), body.bytes().end());
  return out;
}

std::vector<uint8_t> EncodeMtuProbe(const MtuProbe& probe, size_t payload_bytes) {
  std::vector<uint8_t> out = Encode(Message(probe));
  if (payload_bytes > out.size()) out.resize(payload_bytes, 0x5a);
  return out;
}

}  // namespace stallscope::net
