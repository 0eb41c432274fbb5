#include "net/protocol.h"

#include <gtest/gtest.h>

#include <string>

#include "core/file.h"

namespace stallscope::net {
namespace {

const std::string kFixtures = std::string(STALLSCOPE_FIXTURES) + "/net_protocol/";

std::vector<uint8_t> Fixture(const std::string& name) {
  Result<std::string> text = ReadFile(kFixtures + name + "/net_message");
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  if (!text.ok()) return {};
  return std::vector<uint8_t>(text->begin(), text->end());
}

std::span<const uint8_t> Bytes(const std::vector<uint8_t>& v) { return v; }

// The fixtures were encoded by tests/fixtures/net_protocol/make_messages.py
// from docs/net-protocol.md: parsing them checks the code against the document.
TEST(NetProtocol, ParsesMessagesEncodedFromTheDocument) {
  Result<Message> hello = ParseMessage(Bytes(Fixture("hello_sink")));
  ASSERT_TRUE(hello.ok()) << hello.status().ToString();
  ASSERT_TRUE(std::holds_alternative<Hello>(*hello));
  EXPECT_EQ(std::get<Hello>(*hello).mode, TestMode::kSink);
  EXPECT_EQ(std::get<Hello>(*hello).duration_ms, 3000u);

  Result<Message> welcome = ParseMessage(Bytes(Fixture("welcome_ok")));
  ASSERT_TRUE(welcome.ok()) << welcome.status().ToString();
  const Welcome& w = std::get<Welcome>(*welcome);
  EXPECT_EQ(w.status, WelcomeStatus::kOk);
  EXPECT_EQ(w.mtu, 9000u);
  EXPECT_EQ(w.max_duration_ms, 60000u);
  EXPECT_EQ(w.interface, "eth0");

  EXPECT_EQ(std::get<Welcome>(*ParseMessage(Bytes(Fixture("welcome_busy")))).status,
            WelcomeStatus::kBusy);
  const SinkResult sink = std::get<SinkResult>(*ParseMessage(Bytes(Fixture("sink_result"))));
  EXPECT_EQ(sink.bytes, 1234567890123u);
  EXPECT_EQ(sink.nanoseconds, 2000000000u);
  EXPECT_EQ(std::get<Ping>(*ParseMessage(Bytes(Fixture("ping")))).sequence, 7u);
  EXPECT_EQ(std::get<Pong>(*ParseMessage(Bytes(Fixture("pong")))).timestamp_ns, 123456789u);
  const MtuAck ack = std::get<MtuAck>(*ParseMessage(Bytes(Fixture("mtu_ack"))));
  EXPECT_EQ(ack.token, 0xDEADBEEFu);
  EXPECT_EQ(ack.received_bytes, 1472u);
  EXPECT_EQ(ack.mtu, 1500u);
  EXPECT_EQ(ack.interface, "vpeer0");
  EXPECT_EQ(std::get<ErrorMessage>(*ParseMessage(Bytes(Fixture("error")))).text,
            "expected Hello first.....");
}

TEST(NetProtocol, PaddingIsAllowedOnlyForUdpMtuProbes) {
  std::vector<uint8_t> probe = Fixture("mtu_probe_1472");
  ASSERT_EQ(probe.size(), 1472u);
  Result<Message> padded = ParseMessage(Bytes(probe), /*allow_padding=*/true);
  ASSERT_TRUE(padded.ok()) << padded.status().ToString();
  EXPECT_EQ(std::get<MtuProbe>(*padded).sequence, 3u);
  Result<Message> strict = ParseMessage(Bytes(probe));
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("1456 bytes after the MtuProbe"), std::string::npos)
      << strict.status().message();
  // A Ping with trailing bytes is wrong even in a datagram.
  std::vector<uint8_t> ping = Fixture("ping");
  ping.push_back(0);
  EXPECT_FALSE(ParseMessage(Bytes(ping), true).ok());
}

TEST(NetProtocol, EncodeMatchesTheDocumentBytes) {
  EXPECT_EQ(Encode(Welcome{WelcomeStatus::kOk, 9000, 60000, "eth0"}), Fixture("welcome_ok"));
  EXPECT_EQ(Encode(Hello{TestMode::kSink, 3000}), Fixture("hello_sink"));
  EXPECT_EQ(EncodeMtuProbe(MtuProbe{3, 0xDEADBEEF}, 1472), Fixture("mtu_probe_1472"));
  EXPECT_EQ(Encode(MtuAck{3, 0xDEADBEEF, 1472, 1500, "vpeer0"}), Fixture("mtu_ack"));
}

TEST(NetProtocol, RejectsWithAReason) {
  struct Case {
    std::vector<uint8_t> bytes;
    std::string says;
  };
  std::vector<uint8_t> ping = Fixture("ping");
  std::vector<uint8_t> wrong_magic = ping;
  wrong_magic[0] = 'X';
  std::vector<uint8_t> version2 = ping;
  version2[4] = 2;
  std::vector<uint8_t> type9 = ping;
  type9[5] = 9;
  std::vector<uint8_t> huge = ping;
  huge[6] = 0xff;
  std::vector<uint8_t> cut(ping.begin(), ping.end() - 3);
  std::vector<uint8_t> short_body = Encode(Ping{1, 2});
  short_body[7] = 4;  // says 4 body bytes, a Ping needs 16
  short_body.resize(12);
  std::vector<uint8_t> bad_mode = Fixture("hello_sink");
  bad_mode[8] = 7;
  std::vector<uint8_t> long_name = Fixture("welcome_ok");
  long_name[8 + 12] = 200;  // the name's length byte
  std::vector<Case> cases = {
      {{}, "shorter than the 8-byte header"},
      {{'S', 'S', 'N'}, "shorter than the 8-byte header"},
      {wrong_magic, "bad magic"},
      {version2, "protocol version 2 (this stallscope speaks version 1)"},
      {type9, "unknown message type 9"},
      {huge, "exceeds 512"},
      {cut, "body cut short"},
      {short_body, "too short for its fields"},
      {bad_mode, "unknown test mode 7"},
      {long_name, "interface name of 200 bytes exceeds 15"},
  };
  for (const Case& c : cases) {
    Result<Message> m = ParseMessage(Bytes(c.bytes));
    ASSERT_FALSE(m.ok()) << c.says;
    EXPECT_EQ(m.status().code(), Status::Code::kParseError);
    EXPECT_NE(m.status().message().find(c.says), std::string::npos)
        << "wanted '" << c.says << "' in: " << m.status().message();
  }
}

TEST(NetProtocol, EveryMessageRoundTrips) {
  std::vector<Message> all = {Hello{TestMode::kEcho, 0},
                              Welcome{WelcomeStatus::kBadRequest, 0, 1, ""},
                              SinkResult{~0ull, 1},
                              Ping{~0ull, 0},
                              Pong{0, ~0ull},
                              MtuProbe{~0u, 0},
                              MtuAck{1, 2, 65507, 65536, "lo"},
                              ErrorMessage{std::string(300, 'x')}};
  for (const Message& m : all) {
    std::vector<uint8_t> bytes = Encode(m);
    Result<Message> back = ParseMessage(Bytes(bytes));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->index(), m.index());
    EXPECT_EQ(Encode(*back), bytes);
  }
  // Over-long strings are cut to their caps, not sent as unparseable.
  EXPECT_EQ(
      std::get<ErrorMessage>(*ParseMessage(Bytes(Encode(ErrorMessage{std::string(300, 'x')}))))
          .text.size(),
      kMaxErrorTextBytes);
}

}  // namespace
}  // namespace stallscope::net
