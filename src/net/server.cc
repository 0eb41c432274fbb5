#include "net/server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "core/units.h"
#include "net/protocol.h"
#include "net/route.h"
#include "net/socket_io.h"

namespace stallscope::net {
namespace {

constexpr size_t kStreamBufferBytes = 256 << 10;
constexpr size_t kDatagramBufferBytes = 65536;
constexpr int kBusyResponders = 4;  // connections beyond the cap that still hear "busy"
constexpr uint64_t kMaxPingsPerConnection = 1000000;
constexpr double kStreamGraceSeconds = 5;  // an honest client's stream may end this much late
constexpr size_t kMaxRateSources = 4096;   // source addresses the UDP rate limit remembers
constexpr size_t kMaxNotedSources = 4096;  // addresses logged once; past that, only counted

std::mutex log_mutex;

void Log(std::FILE* log, const std::string& line) {
  if (log == nullptr) return;
  std::lock_guard<std::mutex> lock(log_mutex);
  std::fputs(("net serve: " + line + "\n").c_str(), log);
  std::fflush(log);
}

std::string PeerText(const sockaddr_storage& address) {
  const auto* a = reinterpret_cast<const sockaddr*>(&address);
  uint16_t port = a->sa_family == AF_INET
                      ? ntohs(reinterpret_cast<const sockaddr_in*>(a)->sin_port)
                      : ntohs(reinterpret_cast<const sockaddr_in6*>(a)->sin6_port);
  return fmt::format("{}:{}", AddressText(a), port);
}

// The interface (and its MTU) that carries a connected socket's local end.
Welcome WelcomeFor(int fd, const ServeOptions& options) {
  Welcome w;
  w.max_duration_ms = static_cast<uint32_t>(options.max_stream_seconds * 1000);
  sockaddr_storage local{};
  socklen_t length = sizeof local;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
    w.interface = InterfaceOfAddress(AddressText(reinterpret_cast<const sockaddr*>(&local)));
    if (std::optional<uint64_t> mtu = InterfaceMtu(w.interface)) {
      w.mtu = static_cast<uint32_t>(*mtu);
    }
  }
  return w;
}

void Refuse(int fd, const std::string& why) {
  (void)WriteMessage(fd, ErrorMessage{why}, DeadlineIn(1.0));
}

// A connection from outside --allow: told why in one Error (if the socket
// takes it at once), then closed; no thread, no wait.
void RefuseAddress(int fd, const sockaddr_storage& from) {
  std::vector<uint8_t> bytes =
      Encode(ErrorMessage{fmt::format("{} is not in this server's --allow list",
                                      AddressText(reinterpret_cast<const sockaddr*>(&from)))});
  (void)::send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
}

// One of the max_connections test slots, held while a sink or echo test
// runs; released when the work is done (before the last answer is sent, so
// a client that opens its next test right after finds the slot free).
class Slot {
 public:
  explicit Slot(std::atomic<int>& running) : running_(running) { running_.fetch_add(1); }
  ~Slot() { Release(); }
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  void Release() {
    if (held_) running_.fetch_sub(1);
    held_ = false;
  }

 private:
  std::atomic<int>& running_;
  bool held_ = true;
};

// Ends a sink stream at a cap: the client hears which, then the FIN.
void CutStream(int fd, const ServeOptions& options, const std::string& peer,
               const std::string& why) {
  Refuse(fd, "stream cut at " + why);
  ::shutdown(fd, SHUT_WR);
  Log(options.log, fmt::format("{}: sink stream cut at {}", peer, why));
}

void ServeSink(int fd, const Hello& hello, const ServeOptions& options, const std::string& peer,
               Slot& slot) {
  std::vector<uint8_t> buffer(kStreamBufferBytes);
  // A client that asks for more than the cap is cut at the cap; one that
  // asks for less gets a grace for its late start and its last send.
  const double asked = static_cast<double>(hello.duration_ms) / 1000.0;
  const bool over_cap = asked > options.max_stream_seconds;
  const double limit = over_cap ? options.max_stream_seconds : asked + kStreamGraceSeconds;
  const int64_t start = MonotonicNs();
  const int64_t end = start + static_cast<int64_t>(limit * 1e9);
  int64_t first = 0;
  int64_t last = 0;
  uint64_t bytes = 0;
  while (true) {
    if (MonotonicNs() >= end) {
      CutStream(fd, options, peer,
                over_cap ? fmt::format("the server's cap of {:g} s (--max-seconds; {:g} s asked)",
                                       options.max_stream_seconds, asked)
                         : fmt::format("{:g} s, past the {:g} s asked", limit, asked));
      return;
    }
    ssize_t n = ::recv(fd, buffer.data(), buffer.size(), MSG_DONTWAIT);
    if (n > 0) {
      last = MonotonicNs();
      if (first == 0) first = last;
      bytes += static_cast<uint64_t>(n);
      if (options.max_stream_bytes > 0 && bytes > options.max_stream_bytes) {
        CutStream(fd, options, peer,
                  fmt::format("the server's cap of {} (--max-bytes {})",
                              FormatBytes(options.max_stream_bytes), options.max_stream_bytes));
        return;
      }
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      Status waited =
          WaitFor(fd, POLLIN, std::min(DeadlineIn(options.idle_timeout_seconds), end), "stream");
      if (!waited.ok() && MonotonicNs() < end) {
        Log(options.log, fmt::format("{}: sink stream silent for {:.0f} s, closed", peer,
                                     options.idle_timeout_seconds));
        return;
      }
      continue;
    }
    Log(options.log, fmt::format("{}: sink stream broke after {}: {}", peer, FormatBytes(bytes),
                                 std::strerror(errno)));
    return;
  }
  SinkResult result{bytes, static_cast<uint64_t>(last > first ? last - first : 0)};
  slot.Release();
  Status sent = WriteMessage(fd, result, DeadlineIn(options.idle_timeout_seconds));
  double seconds = static_cast<double>(result.nanoseconds) / 1e9;
  Log(options.log,
      fmt::format("{}: sink {} in {:.2f} s ({:.2f} Gbit/s){}", peer, FormatBytes(bytes), seconds,
                  seconds > 0 ? static_cast<double>(bytes) * 8 / seconds / 1e9 : 0.0,
                  sent.ok() ? "" : ", result not delivered: " + sent.message()));
}

void ServeEcho(int fd, const ServeOptions& options, const std::string& peer) {
  uint64_t pings = 0;
  while (pings < kMaxPingsPerConnection) {
    Result<Message> m = ReadMessage(fd, DeadlineIn(options.idle_timeout_seconds));
    if (!m.ok()) {
      if (!m.status().IsNotFound()) {
        if (m.status().code() == Status::Code::kParseError) Refuse(fd, m.status().message());
        Log(options.log,
            fmt::format("{}: echo ended after {} pings: {}", peer, pings, m.status().message()));
      }
      break;
    }
    const Ping* ping = std::get_if<Ping>(&*m);
    if (ping == nullptr) {
      Refuse(fd, "expected Ping during an echo test");
      Log(options.log, fmt::format("{}: echo got something other than a Ping, closed", peer));
      return;
    }
    if (!WriteMessage(fd, Pong{ping->sequence, ping->timestamp_ns},
                      DeadlineIn(options.idle_timeout_seconds))
             .ok()) {
      return;
    }
    ++pings;
  }
}

void ServeConnection(int fd, std::string peer, std::atomic<int>& running,
                     const ServeOptions& options) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  Result<Message> first = ReadMessage(fd, DeadlineIn(options.idle_timeout_seconds));
  if (!first.ok()) {
    if (first.status().code() == Status::Code::kParseError) Refuse(fd, first.status().message());
    Log(options.log, fmt::format("{}: no test: {}", peer, first.status().message()));
    return;
  }
  const Hello* hello = std::get_if<Hello>(&*first);
  if (hello == nullptr) {
    Refuse(fd, "expected Hello first");
    Log(options.log, fmt::format("{}: first message was not a Hello, closed", peer));
    return;
  }
  // The info test is one answer: it takes no slot.
  std::optional<Slot> slot;
  bool busy = false;
  if (hello->mode != TestMode::kInfo) {
    slot.emplace(running);
    busy = running.load() > options.max_connections;
  }
  Welcome welcome = WelcomeFor(fd, options);
  if (busy) welcome.status = WelcomeStatus::kBusy;
  if (!WriteMessage(fd, welcome, DeadlineIn(options.idle_timeout_seconds)).ok() || busy) {
    if (busy) Log(options.log, fmt::format("{}: busy, turned away", peer));
    return;
  }
  switch (hello->mode) {
    case TestMode::kInfo:
      Log(options.log, fmt::format("{}: info ({} MTU {})", peer, welcome.interface, welcome.mtu));
      return;
    case TestMode::kSink:
      ServeSink(fd, *hello, options, peer, *slot);
      return;
    case TestMode::kEcho:
      ServeEcho(fd, options, peer);
      return;
  }
}

// What the listener thread keeps about sources: the UDP rate limit, the
// addresses already logged (each kind of trouble once per address), and
// the counts logged when serving ends.
struct Gate {
  explicit Gate(const ServeOptions& o)
      : options(o), limiter(o.udp_replies_per_second, o.udp_replies_per_second, kMaxRateSources) {}
  void NoteOnce(const char* kind, const SourceAddress& address, const std::string& line) {
    if (noted.size() >= kMaxNotedSources) return;
    if (noted.insert(std::string(kind) + " " + SourceText(address)).second) {
      Log(options.log, line + " (logged once per address)");
    }
  }
  void LogCounts() const {
    if (refused_connections + refused_datagrams + ignored_datagrams + rate_limited == 0) return;
    Log(options.log,
        fmt::format("refused {} connections and {} datagrams from outside --allow, ignored {} "
                    "datagrams, held back {} answers over --udp-rate",
                    refused_connections, refused_datagrams, ignored_datagrams, rate_limited));
  }
  const ServeOptions& options;
  ReplyRateLimiter limiter;
  std::set<std::string> noted;
  uint64_t refused_connections = 0;
  uint64_t refused_datagrams = 0;
  uint64_t ignored_datagrams = 0;
  uint64_t rate_limited = 0;
};

// False (and noted) when `from` may not use this server.
bool Admits(Gate& gate, const sockaddr_storage& from, const char* what) {
  SourceAddress source = SourceOf(reinterpret_cast<const sockaddr*>(&from));
  if (gate.options.allow.Allows(source)) return true;
  gate.NoteOnce(what, source,
                fmt::format("{}: not in --allow, {} refused", SourceText(source), what));
  return false;
}

// Answers every datagram waiting on the UDP socket (at most 64 a round, so
// a flood cannot starve the listener). Nothing goes to a source outside
// --allow, to a probe smaller than kMinMtuProbeBytes, or past a source's
// --udp-rate; an answer is never larger than the datagram it answers.
void AnswerDatagrams(int udp, std::vector<uint8_t>& buffer, Gate& gate) {
  const ServeOptions& options = gate.options;
  for (int round = 0; round < 64; ++round) {
    sockaddr_storage from{};
    iovec io{buffer.data(), buffer.size()};
    alignas(cmsghdr) char control[256];
    msghdr msg{};
    msg.msg_name = &from;
    msg.msg_namelen = sizeof from;
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n = ::recvmsg(udp, &msg, MSG_DONTWAIT);
    if (n < 0) return;  // EAGAIN: drained
    if (!Admits(gate, from, "datagrams")) {
      ++gate.refused_datagrams;
      continue;
    }
    const SourceAddress source = SourceOf(reinterpret_cast<const sockaddr*>(&from));
    Result<Message> m = ParseMessage(
        std::span<const uint8_t>(buffer.data(), static_cast<size_t>(n)), /*allow_padding=*/true);
    const MtuProbe* probe = m.ok() ? std::get_if<MtuProbe>(&*m) : nullptr;
    if (probe == nullptr || (msg.msg_flags & MSG_TRUNC) ||
        static_cast<size_t>(n) < kMinMtuProbeBytes) {
      ++gate.ignored_datagrams;
      gate.NoteOnce("ignored", source,
                    fmt::format("{}: ignored a datagram of {} bytes: {}", PeerText(from), n,
                                !m.ok()            ? m.status().message()
                                : probe == nullptr ? std::string("not an MtuProbe")
                                : static_cast<size_t>(n) < kMinMtuProbeBytes
                                    ? fmt::format("under {} bytes", kMinMtuProbeBytes)
                                    : std::string("truncated")));
      continue;
    }
    if (!gate.limiter.Allow(source, MonotonicNs())) {
      ++gate.rate_limited;
      gate.NoteOnce("rate", source,
                    fmt::format("{}: over --udp-rate {:g} answers a second, the rest held back",
                                SourceText(source), options.udp_replies_per_second));
      continue;
    }
    int ifindex = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
        in_pktinfo info;
        std::memcpy(&info, CMSG_DATA(c), sizeof info);
        ifindex = info.ipi_ifindex;
      } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
        in6_pktinfo info;
        std::memcpy(&info, CMSG_DATA(c), sizeof info);
        ifindex = static_cast<int>(info.ipi6_ifindex);
      }
    }
    MtuAck ack;
    ack.sequence = probe->sequence;
    ack.token = probe->token;
    ack.received_bytes = static_cast<uint32_t>(n);
    char name[IF_NAMESIZE] = {};
    if (ifindex > 0 && ::if_indextoname(static_cast<unsigned>(ifindex), name) != nullptr) {
      ack.interface = name;
      ack.mtu = static_cast<uint32_t>(InterfaceMtu(ack.interface).value_or(0));
    }
    std::vector<uint8_t> reply = Encode(ack);
    if (reply.size() > static_cast<size_t>(n)) continue;  // never more than what arrived
    ::sendto(udp, reply.data(), reply.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from),
             msg.msg_namelen);
  }
}

Result<sockaddr_storage> BindAddress(const std::string& text, uint16_t port, socklen_t* length) {
  sockaddr_storage out{};
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out);
  if (::inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    *length = sizeof *v4;
    return out;
  }
  if (::inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    *length = sizeof *v6;
    return out;
  }
  return Status::InvalidArgument("--bind " + text + ": not an IPv4 or IPv6 address");
}

}  // namespace

Result<NetServer> NetServer::Listen(const ServeOptions& options) {
  socklen_t length = 0;
  Result<sockaddr_storage> address = BindAddress(options.bind, options.port, &length);
  if (!address.ok()) return address.status();
  NetServer server;
  server.options_ = options;
  const int family = address->ss_family;
  std::string where = fmt::format("{} port {}", options.bind, options.port);
  server.tcp_ = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (server.tcp_ < 0) return Status::FromErrno("socket", errno);
  int one = 1;
  ::setsockopt(server.tcp_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(server.tcp_, reinterpret_cast<sockaddr*>(&*address), length) != 0) {
    return Status::FromErrno("bind TCP " + where, errno);
  }
  if (::listen(server.tcp_, 32) != 0) return Status::FromErrno("listen " + where, errno);
  sockaddr_storage bound{};
  socklen_t bound_length = sizeof bound;
  ::getsockname(server.tcp_, reinterpret_cast<sockaddr*>(&bound), &bound_length);
  server.port_ = family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port)
                                   : ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  if (family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&*address)->sin_port = htons(server.port_);
  } else {
    reinterpret_cast<sockaddr_in6*>(&*address)->sin6_port = htons(server.port_);
  }
  server.udp_ = ::socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (server.udp_ < 0) return Status::FromErrno("socket", errno);
  if (family == AF_INET) {
    ::setsockopt(server.udp_, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
  } else {
    ::setsockopt(server.udp_, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one);
  }
  if (::bind(server.udp_, reinterpret_cast<sockaddr*>(&*address), length) != 0) {
    return Status::FromErrno(fmt::format("bind UDP {} port {}", options.bind, server.port_), errno);
  }
  return server;
}

NetServer::NetServer(NetServer&& other) noexcept
    : options_(std::move(other.options_)), port_(other.port_), tcp_(other.tcp_), udp_(other.udp_) {
  other.tcp_ = -1;
  other.udp_ = -1;
}

NetServer::~NetServer() {
  if (tcp_ >= 0) ::close(tcp_);
  if (udp_ >= 0) ::close(udp_);
}

Status NetServer::Serve(const std::atomic<bool>& stop) {
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
    int fd;
  };
  std::vector<Worker> workers;
  std::atomic<int> running{0};  // sink and echo tests in progress
  std::vector<uint8_t> datagram(kDatagramBufferBytes);
  Gate gate(options_);
  auto reap = [&](bool all) {
    for (auto it = workers.begin(); it != workers.end();) {
      if (all) ::shutdown(it->fd, SHUT_RDWR);
      if (all || it->done->load()) {
        it->thread.join();
        ::close(it->fd);
        it = workers.erase(it);
      } else {
        ++it;
      }
    }
  };
  while (!stop.load()) {
    pollfd fds[2] = {{tcp_, POLLIN, 0}, {udp_, POLLIN, 0}};
    int rc = ::poll(fds, 2, 100);
    reap(false);
    if (rc < 0 && errno != EINTR) {
      Status failed = Status::FromErrno("poll", errno);
      reap(true);
      return failed;
    }
    if (rc <= 0) continue;
    if (fds[1].revents & POLLIN) AnswerDatagrams(udp_, datagram, gate);
    if (fds[0].revents & POLLIN) {
      sockaddr_storage from{};
      socklen_t length = sizeof from;
      int fd = ::accept4(tcp_, reinterpret_cast<sockaddr*>(&from), &length, SOCK_CLOEXEC);
      if (fd < 0) continue;
      if (!Admits(gate, from, "connections")) {
        ++gate.refused_connections;
        RefuseAddress(fd, from);
        continue;
      }
      if (static_cast<int>(workers.size()) >= options_.max_connections + kBusyResponders) {
        ::close(fd);  // past even the busy answers: no thread, no memory
        continue;
      }
      auto done = std::make_shared<std::atomic<bool>>(false);
      std::string peer = PeerText(from);
      const ServeOptions& options = options_;
      workers.push_back({std::thread([fd, peer, &running, &options, done] {
                           ServeConnection(fd, peer, running, options);
                           done->store(true);
                         }),
                         done, fd});
    }
  }
  reap(true);
  gate.LogCounts();
  return Status::Ok();
}

}  // namespace stallscope::net
