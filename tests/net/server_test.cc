// net serve and net probe against each other on loopback, in one process:
// the server's defences (garbage, a peer that vanishes mid-test, a full
// house) and the probe's figures. The same between two network namespaces
// is tests/e2e/net_namespaces.py.
#include "net/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "net/client.h"
#include "net/protocol.h"
#include "net/socket_io.h"

namespace stallscope::net {
namespace {

class ServerFixture : public ::testing::Test {
 protected:
  void Start(ServeOptions options = {}) {
    options.bind = "127.0.0.1";
    options.port = 0;
    options.idle_timeout_seconds = 1.0;
    Result<NetServer> server = NetServer::Listen(options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    port_ = server->port();
    server_.emplace(std::move(*server));
    thread_ = std::thread([this] { served_ = server_->Serve(stop_); });
  }
  void TearDown() override {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    EXPECT_TRUE(served_.ok()) << served_.ToString();
  }
  int Connect(int type = SOCK_STREAM) {
    int fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port_);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    return fd;
  }
  ProbeOptions Quick() {
    ProbeOptions o;
    o.host = "127.0.0.1";
    o.port = port_;
    o.duration_seconds = 0.3;
    o.streams = 2;
    o.pings = 50;
    o.timeout_seconds = 3;
    return o;
  }

  std::optional<NetServer> server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  Status served_;
  uint16_t port_ = 0;
};

TEST_F(ServerFixture, ProbeMeasuresLoopback) {
  Start();
  Result<ProbeResult> r = RunProbe(Quick(), nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->local_interface, "lo");
  EXPECT_EQ(r->peer_interface, "lo");
  ASSERT_TRUE(r->local_mtu);
  EXPECT_EQ(r->peer_mtu, r->local_mtu);
  ASSERT_TRUE(r->mtu.measured) << r->mtu.note;
  // lo's MTU is 65536: the largest UDP payload is capped at 65507.
  EXPECT_EQ(r->mtu.largest_payload, std::min<uint64_t>(*r->local_mtu - 28, 65507));
  EXPECT_EQ(r->latency.samples, 50);
  EXPECT_GT(r->latency.p50_us, 0);
  EXPECT_LE(r->latency.p50_us, r->latency.p99_us);
  ASSERT_TRUE(r->single && r->parallel);
  EXPECT_GT(r->single->bytes, 1u << 20);
  EXPECT_GT(r->single->bits_per_second, 1e8);  // loopback moves far more than 100 Mbit/s
  EXPECT_EQ(r->parallel->streams, 2);
  EXPECT_GE(r->single->seconds, 0.3);
}

TEST_F(ServerFixture, SurvivesGarbageAndPeersThatVanish) {
  Start();
  // TCP garbage: the server answers with an Error naming the problem.
  int garbage = Connect();
  const char junk[] = "GET / HTTP/1.0\r\n\r\n";
  ASSERT_TRUE(WriteAll(garbage, std::span(reinterpret_cast<const uint8_t*>(junk), sizeof junk - 1),
                       DeadlineIn(1))
                  .ok());
  Result<Message> reply = ReadMessage(garbage, DeadlineIn(3));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  ASSERT_TRUE(std::holds_alternative<ErrorMessage>(*reply));
  EXPECT_NE(std::get<ErrorMessage>(*reply).text.find("bad magic"), std::string::npos);
  ::close(garbage);

  // A header that promises a body and then disconnects.
  int cut = Connect();
  std::vector<uint8_t> hello = Encode(Hello{TestMode::kSink, 1000});
  ASSERT_TRUE(WriteAll(cut, std::span(hello.data(), 10), DeadlineIn(1)).ok());
  ::close(cut);

  // A sink stream that dies midway (RST: unread data, SO_LINGER 0).
  int dying = Connect();
  ASSERT_TRUE(WriteMessage(dying, Hello{TestMode::kSink, 5000}, DeadlineIn(1)).ok());
  ASSERT_TRUE(ReadMessage(dying, DeadlineIn(2)).ok());
  std::vector<uint8_t> data(1 << 20, 7);
  ASSERT_TRUE(WriteAll(dying, data, DeadlineIn(2)).ok());
  linger abort_close{1, 0};
  ::setsockopt(dying, SOL_SOCKET, SO_LINGER, &abort_close, sizeof abort_close);
  ::close(dying);

  // A silent peer: connected, says nothing (the idle timeout ends it).
  int silent = Connect();

  // UDP garbage and a truncated probe: ignored, no reply, no crash.
  int udp = Connect(SOCK_DGRAM);
  ASSERT_EQ(::send(udp, junk, sizeof junk, 0), static_cast<ssize_t>(sizeof junk));
  std::vector<uint8_t> probe = Encode(MtuProbe{1, 2});
  ASSERT_EQ(::send(udp, probe.data(), 9, 0), 9);
  EXPECT_FALSE(WaitFor(udp, POLLIN, DeadlineIn(0.3), "reply").ok());
  ::close(udp);

  // A proper probe still works, while the silent peer is still connected.
  Result<ProbeResult> r = RunProbe(Quick(), nullptr);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->single->bytes, 0u);
  EXPECT_TRUE(r->mtu.measured);
  ::close(silent);
}

TEST_F(ServerFixture, TurnsAwayConnectionsBeyondItsCap) {
  ServeOptions options;
  options.max_connections = 1;
  Start(options);
  int held = Connect();
  ASSERT_TRUE(WriteMessage(held, Hello{TestMode::kEcho, 0}, DeadlineIn(1)).ok());
  ASSERT_TRUE(ReadMessage(held, DeadlineIn(2)).ok());
  ProbeOptions o = Quick();
  o.throughput = false;
  Result<ProbeResult> r = RunProbe(o, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("busy"), std::string::npos) << r.status().message();
  ::close(held);
  // Once the held connection is gone, the server takes probes again.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  r = RunProbe(o, nullptr);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
}

TEST(NetServer, BadBindAddressIsAUsageError) {
  ServeOptions options;
  options.bind = "not-an-address";
  Result<NetServer> server = NetServer::Listen(options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(server.status().message().find("--bind not-an-address"), std::string::npos);
}

TEST(NetProbe, NoServerIsUnavailableNamingTheHost) {
  // A port nobody listens on: bind one, learn its number, close it.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t length = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length);
  ::close(fd);
  ProbeOptions o;
  o.host = "127.0.0.1";
  o.port = ntohs(a.sin_port);
  Result<ProbeResult> r = RunProbe(o, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kUnavailable);
  EXPECT_NE(r.status().message().find("127.0.0.1 port"), std::string::npos);
  EXPECT_NE(r.status().message().find("net serve"), std::string::npos);
}

}  // namespace
}  // namespace stallscope::net
