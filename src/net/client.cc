#include "net/client.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "net/protocol.h"
#include "net/route.h"
#include "net/socket_io.h"

namespace stallscope::net {
namespace {

constexpr size_t kStreamChunkBytes = 128 << 10;
constexpr int kWarmupPings = 5;
constexpr double kMtuProbeWaitSeconds = 0.2;  // per datagram: a LAN answers in well under 1 ms
constexpr int kMtuProbeAttempts = 2;          // a lost probe is sent once more
constexpr uint64_t kSmallestMtuProbe = kMinMtuProbeBytes;  // the least a server answers
constexpr uint64_t kLargestUdpPayload = 65507;

// Owns one socket descriptor.
class Socket {
 public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  Socket(const Socket&) = delete;
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

std::string Where(const ProbeOptions& o) { return fmt::format("{} port {}", o.host, o.port); }

Result<Socket> Connect(const PeerAddress& peer, const ProbeOptions& o) {
  Socket s(::socket(peer.address.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (s.fd() < 0) return Status::FromErrno("socket", errno);
  if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&peer.address), peer.length) != 0 &&
      errno != EINPROGRESS) {
    return Status::Unavailable(
        fmt::format("{}: cannot connect: {} (is `stallscope net serve` "
                    "running there?)",
                    Where(o), std::strerror(errno)));
  }
  if (Status s2 = WaitFor(s.fd(), POLLOUT, DeadlineIn(o.timeout_seconds), "connect"); !s2.ok()) {
    return Status::Unavailable(Where(o) + ": no answer to connect within " +
                               fmt::format("{:.0f} s", o.timeout_seconds));
  }
  int error = 0;
  socklen_t length = sizeof error;
  ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &error, &length);
  if (error != 0) {
    return Status::Unavailable(
        fmt::format("{}: cannot connect: {} (is `stallscope net serve` "
                    "running there?)",
                    Where(o), std::strerror(error)));
  }
  int one = 1;
  ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return s;
}

// A connection that runs one test: Hello sent, Welcome read.
Result<Socket> Open(const PeerAddress& peer, const ProbeOptions& o, TestMode mode,
                    uint32_t duration_ms, Welcome* welcome) {
  Result<Socket> s = Connect(peer, o);
  if (!s.ok()) return s.status();
  int64_t deadline = DeadlineIn(o.timeout_seconds);
  if (Status st = WriteMessage(s->fd(), Hello{mode, duration_ms}, deadline); !st.ok()) {
    return Status::Unavailable(Where(o) + ": " + st.message());
  }
  Result<Message> reply = ReadMessage(s->fd(), deadline);
  if (!reply.ok()) {
    return Status::Unavailable(Where(o) +
                               ": no Welcome from the server: " + reply.status().message());
  }
  if (const ErrorMessage* e = std::get_if<ErrorMessage>(&*reply)) {
    return Status::Unavailable(Where(o) + ": the server refused: " + e->text);
  }
  const Welcome* w = std::get_if<Welcome>(&*reply);
  if (w == nullptr) return Status::Unavailable(Where(o) + ": the server did not answer Welcome");
  if (w->status == WelcomeStatus::kBusy) {
    return Status::Unavailable(Where(o) + ": the server is busy with other probes; retry later");
  }
  if (w->status != WelcomeStatus::kOk) {
    return Status::Unavailable(Where(o) + ": the server rejected the request");
  }
  if (welcome) *welcome = *w;
  return s;
}

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  double rank = p * static_cast<double>(sorted.size() - 1);
  size_t low = static_cast<size_t>(std::floor(rank));
  size_t high = std::min(low + 1, sorted.size() - 1);
  return sorted[low] + (sorted[high] - sorted[low]) * (rank - static_cast<double>(low));
}

Result<LatencyResult> MeasureLatency(const PeerAddress& peer, const ProbeOptions& o) {
  Result<Socket> s = Open(peer, o, TestMode::kEcho, 0, nullptr);
  if (!s.ok()) return s.status();
  std::vector<double> rtts;
  rtts.reserve(static_cast<size_t>(o.pings));
  for (int i = 0; i < kWarmupPings + o.pings; ++i) {
    int64_t sent = MonotonicNs();
    int64_t deadline = DeadlineIn(o.timeout_seconds);
    Ping ping{static_cast<uint64_t>(i), static_cast<uint64_t>(sent)};
    if (Status st = WriteMessage(s->fd(), ping, deadline); !st.ok()) {
      return Status::Unavailable(Where(o) + ": echo: " + st.message());
    }
    Result<Message> reply = ReadMessage(s->fd(), deadline);
    if (!reply.ok()) return Status::Unavailable(Where(o) + ": echo: " + reply.status().message());
    const Pong* pong = std::get_if<Pong>(&*reply);
    if (pong == nullptr || pong->sequence != ping.sequence) {
      return Status::Unavailable(Where(o) + ": echo: the server answered out of turn");
    }
    if (i >= kWarmupPings) rtts.push_back(static_cast<double>(MonotonicNs() - sent) / 1e3);
  }
  std::sort(rtts.begin(), rtts.end());
  LatencyResult r;
  r.samples = static_cast<int>(rtts.size());
  if (!rtts.empty()) {
    r.min_us = rtts.front();
    r.max_us = rtts.back();
    r.p50_us = Percentile(rtts, 0.50);
    r.p99_us = Percentile(rtts, 0.99);
  }
  return r;
}

struct StreamOutcome {
  Status status;
  uint64_t bytes = 0;
  double seconds = 0;
};

void RunStream(int fd, const ProbeOptions& o, int64_t start, StreamOutcome& out) {
  std::vector<uint8_t> chunk(kStreamChunkBytes);
  std::mt19937 random(static_cast<unsigned>(start));
  for (uint8_t& b : chunk) b = static_cast<uint8_t>(random());
  const int64_t end = start + static_cast<int64_t>(o.duration_seconds * 1e9);
  while (MonotonicNs() < end) {
    if (Status st = WriteAll(fd, chunk, end + static_cast<int64_t>(o.timeout_seconds * 1e9));
        !st.ok()) {
      out.status = Status::Unavailable("stream: " + st.message());
      return;
    }
  }
  ::shutdown(fd, SHUT_WR);
  Result<Message> reply = ReadMessage(fd, DeadlineIn(o.timeout_seconds));
  if (!reply.ok()) {
    out.status = Status::Unavailable("stream result: " + reply.status().message());
    return;
  }
  const SinkResult* result = std::get_if<SinkResult>(&*reply);
  if (result == nullptr) {
    const ErrorMessage* e = std::get_if<ErrorMessage>(&*reply);
    out.status = Status::Unavailable(e ? "the server ended the stream: " + e->text
                                       : std::string("the server answered no SinkResult"));
    return;
  }
  out.bytes = result->bytes;
  out.seconds = static_cast<double>(MonotonicNs() - start) / 1e9;
}

Result<ThroughputResult> MeasureThroughput(const PeerAddress& peer, const ProbeOptions& o,
                                           int streams) {
  std::vector<Socket> sockets;
  for (int i = 0; i < streams; ++i) {
    Result<Socket> s =
        Open(peer, o, TestMode::kSink, static_cast<uint32_t>(o.duration_seconds * 1000), nullptr);
    if (!s.ok()) return s.status();
    sockets.push_back(std::move(*s));
  }
  std::vector<StreamOutcome> outcomes(static_cast<size_t>(streams));
  const int64_t start = MonotonicNs();
  std::vector<std::thread> threads;
  for (int i = 0; i < streams; ++i) {
    threads.emplace_back(RunStream, sockets[i].fd(), std::cref(o), start, std::ref(outcomes[i]));
  }
  for (std::thread& t : threads) t.join();
  ThroughputResult r;
  r.streams = streams;
  for (const StreamOutcome& s : outcomes) {
    if (!s.status.ok()) return Status::Unavailable(Where(o) + ": " + s.status.message());
    r.bytes += s.bytes;
    r.seconds = std::max(r.seconds, s.seconds);
  }
  if (r.seconds > 0) r.bits_per_second = static_cast<double>(r.bytes) * 8 / r.seconds;
  return r;
}

enum class ProbeOutcome { kAcked, kLost, kTooBig, kRefused };

class MtuSearch {
 public:
  MtuSearch(int fd, bool ipv6) : fd_(fd), ipv6_(ipv6) {
    std::random_device device;
    token_ = device();
  }
  uint64_t overhead() const { return ipv6_ ? 48 : 28; }  // IP + UDP headers
  int probes() const { return probes_; }
  std::optional<uint64_t> KernelMtu() const {
    int mtu = 0;
    socklen_t length = sizeof mtu;
    int rc = ipv6_ ? ::getsockopt(fd_, IPPROTO_IPV6, IPV6_MTU, &mtu, &length)
                   : ::getsockopt(fd_, IPPROTO_IP, IP_MTU, &mtu, &length);
    if (rc != 0 || mtu <= 0) return std::nullopt;
    return static_cast<uint64_t>(mtu);
  }

  ProbeOutcome Try(uint64_t payload) {
    std::vector<uint8_t> reply(1024);
    for (int attempt = 0; attempt < kMtuProbeAttempts; ++attempt) {
      ++sequence_;
      ++probes_;
      std::vector<uint8_t> datagram = EncodeMtuProbe(MtuProbe{sequence_, token_}, payload);
      if (::send(fd_, datagram.data(), datagram.size(), 0) < 0) {
        if (errno == EMSGSIZE) return ProbeOutcome::kTooBig;
        if (errno == ECONNREFUSED) return ProbeOutcome::kRefused;
        continue;
      }
      int64_t deadline = DeadlineIn(kMtuProbeWaitSeconds);
      while (WaitFor(fd_, POLLIN, deadline, "mtu probe").ok()) {
        ssize_t n = ::recv(fd_, reply.data(), reply.size(), MSG_DONTWAIT);
        if (n < 0) {
          if (errno == ECONNREFUSED) return ProbeOutcome::kRefused;
          continue;
        }
        Result<Message> m =
            ParseMessage(std::span<const uint8_t>(reply.data(), static_cast<size_t>(n)));
        const MtuAck* ack = m.ok() ? std::get_if<MtuAck>(&*m) : nullptr;
        if (ack == nullptr || ack->token != token_ || ack->sequence != sequence_) continue;
        if (ack->received_bytes != payload) continue;  // cut on the way: not this size
        peer_interface = ack->interface;
        if (ack->mtu) peer_mtu = ack->mtu;
        return ProbeOutcome::kAcked;
      }
    }
    return ProbeOutcome::kLost;
  }

  std::string peer_interface;
  std::optional<uint64_t> peer_mtu;

 private:
  int fd_;
  bool ipv6_;
  uint32_t token_ = 0;
  uint32_t sequence_ = 0;
  int probes_ = 0;
};

PathMtuResult MeasurePathMtu(const PeerAddress& peer, std::optional<uint64_t> local_mtu,
                             std::string* peer_interface, std::optional<uint64_t>* peer_mtu) {
  PathMtuResult r;
  const bool ipv6 = peer.address.ss_family == AF_INET6;
  Socket s(::socket(peer.address.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (s.fd() < 0) {
    r.note = std::string("socket: ") + std::strerror(errno);
    return r;
  }
  // Don't fragment: too large a datagram fails or is dropped, never split.
  int mode = ipv6 ? IPV6_PMTUDISC_DO : IP_PMTUDISC_DO;
  int rc = ipv6 ? ::setsockopt(s.fd(), IPPROTO_IPV6, IPV6_MTU_DISCOVER, &mode, sizeof mode)
                : ::setsockopt(s.fd(), IPPROTO_IP, IP_MTU_DISCOVER, &mode, sizeof mode);
  if (rc != 0 ||
      ::connect(s.fd(), reinterpret_cast<const sockaddr*>(&peer.address), peer.length) != 0) {
    r.note = std::string("cannot set up the UDP probe: ") + std::strerror(errno);
    return r;
  }
  MtuSearch search(s.fd(), ipv6);
  uint64_t hi = std::min(local_mtu.value_or(9000) - search.overhead(), kLargestUdpPayload);
  auto shrink_to_kernel = [&] {
    if (std::optional<uint64_t> k = search.KernelMtu(); k && *k > search.overhead()) {
      hi = std::min(hi, *k - search.overhead());
    }
  };
  ProbeOutcome first = search.Try(kSmallestMtuProbe);
  if (first != ProbeOutcome::kAcked) {
    r.note = first == ProbeOutcome::kRefused
                 ? "the UDP port is closed (ICMP port unreachable): the server's UDP side is not "
                   "reachable"
                 : "no answer to UDP probes (a firewall dropping UDP?)";
    r.probes = search.probes();
    return r;
  }
  uint64_t lo = kSmallestMtuProbe;
  ProbeOutcome top = search.Try(hi);
  if (top == ProbeOutcome::kAcked) {
    lo = hi;
  } else {
    if (top == ProbeOutcome::kTooBig) shrink_to_kernel();
    hi -= 1;
    while (lo < hi) {
      uint64_t mid = lo + (hi - lo + 1) / 2;
      ProbeOutcome outcome = search.Try(mid);
      if (outcome == ProbeOutcome::kAcked) {
        lo = mid;
      } else {
        hi = mid - 1;
        if (outcome == ProbeOutcome::kTooBig) shrink_to_kernel();
        hi = std::max(hi, lo);
      }
    }
  }
  r.measured = true;
  r.largest_payload = lo;
  r.path_mtu = lo + search.overhead();
  r.kernel_mtu = search.KernelMtu();
  r.probes = search.probes();
  *peer_interface = search.peer_interface;
  if (search.peer_mtu) *peer_mtu = search.peer_mtu;
  return r;
}

}  // namespace

Result<ProbeResult> RunProbe(const ProbeOptions& o,
                             const std::function<void(const std::string&)>& progress) {
  auto say = [&](const std::string& what) {
    if (progress) progress(what);
  };
  if (o.streams < 1 || o.streams > 16) {
    return Status::InvalidArgument(
        fmt::format("--streams {}: must be 1 to 16 (what a server serves at once)", o.streams));
  }
  if (!(o.duration_seconds > 0 && o.duration_seconds <= 60)) {
    return Status::InvalidArgument(
        fmt::format("--duration {}: must be above 0 and at most 60 seconds", o.duration_seconds));
  }
  if (o.pings < 1 || o.pings > 100000) {
    return Status::InvalidArgument(fmt::format("--pings {}: must be 1 to 100000", o.pings));
  }
  Result<PeerAddress> peer = ResolvePeer(o.host, o.port);
  if (!peer.ok()) return peer.status();
  ProbeResult r;
  r.host = o.host;
  r.address = peer->text;
  r.port = o.port;

  PeerRoute route = RouteTo(peer->text, o.host);
  r.local_address = route.local_address;
  r.local_interface = route.interface;
  r.local_mtu = InterfaceMtu(route.interface);

  say("asking the server for its interface");
  Welcome welcome;
  if (Result<Socket> info = Open(*peer, o, TestMode::kInfo, 0, &welcome); !info.ok()) {
    return info.status();
  }
  r.peer_interface = welcome.interface;
  if (welcome.mtu) r.peer_mtu = welcome.mtu;
  if (o.throughput && welcome.max_duration_ms > 0 &&
      o.duration_seconds * 1000 > welcome.max_duration_ms) {
    return Status::InvalidArgument(
        fmt::format("--duration {:g}: {} allows streams of at most {:g} s (its --max-seconds)",
                    o.duration_seconds, Where(o), welcome.max_duration_ms / 1000.0));
  }

  say(fmt::format("latency: {} round trips", o.pings));
  Result<LatencyResult> latency = MeasureLatency(*peer, o);
  if (!latency.ok()) return latency.status();
  r.latency = *latency;

  say("path MTU: don't-fragment UDP probes");
  std::string udp_interface;
  std::optional<uint64_t> udp_mtu;
  r.mtu = MeasurePathMtu(*peer, r.local_mtu, &udp_interface, &udp_mtu);
  // The interface the probes arrived on is the one the path ends at.
  if (!udp_interface.empty()) r.peer_interface = udp_interface;
  if (udp_mtu) r.peer_mtu = udp_mtu;

  if (o.throughput) {
    say(fmt::format("throughput: 1 stream for {:.1f} s", o.duration_seconds));
    Result<ThroughputResult> single = MeasureThroughput(*peer, o, 1);
    if (!single.ok()) return single.status();
    r.single = *single;
    if (o.streams > 1) {
      say(fmt::format("throughput: {} streams for {:.1f} s", o.streams, o.duration_seconds));
      Result<ThroughputResult> parallel = MeasureThroughput(*peer, o, o.streams);
      if (!parallel.ok()) return parallel.status();
      r.parallel = *parallel;
    }
  }
  return r;
}

}  // namespace stallscope::net
