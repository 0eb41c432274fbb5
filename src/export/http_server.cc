#include "export/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "core/host_clock.h"

namespace stallscope {
namespace {

int64_t Ns(double seconds) { return static_cast<int64_t>(seconds * 1e9); }

// After the answer: read what the client still sends for this long, so that
// closing with unread input does not reset the connection under the answer.
constexpr double kLingerSeconds = 1.0;

std::string_view Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Unknown";
  }
}

}  // namespace

struct HttpServer::Connection {
  enum class State { kReading, kWriting, kLingering, kClosed };
  int fd = -1;
  State state = State::kReading;
  std::string in;
  std::string out;
  size_t sent = 0;
  int64_t deadline_ns = 0;
  ~Connection() {
    if (fd >= 0) close(fd);
  }
};

std::string SerializeHttpResponse(const HttpResponse& response, bool head_only) {
  std::string out =
      fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n", response.status,
                  Reason(response.status), response.content_type, response.body.size());
  for (const auto& [name, value] : response.headers) out += fmt::format("{}: {}\r\n", name, value);
  out += "Connection: close\r\n\r\n";
  if (!head_only) out += response.body;
  return out;
}

Result<HttpServer> HttpServer::Listen(const ListenAddress& address,
                                      const HttpServerOptions& options) {
  HttpServer s;
  s.address_ = address;
  s.options_ = options;
  int family = address.ipv6 ? AF_INET6 : AF_INET;
  s.fd_ = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s.fd_ < 0) return Status::FromErrno("socket", errno);
  int one = 1;
  setsockopt(s.fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_storage ss {};
  socklen_t len;
  if (address.ipv6) {
    auto* a6 = reinterpret_cast<struct sockaddr_in6*>(&ss);
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons(address.port);
    inet_pton(AF_INET6, address.host.c_str(), &a6->sin6_addr);
    len = sizeof *a6;
  } else {
    auto* a4 = reinterpret_cast<struct sockaddr_in*>(&ss);
    a4->sin_family = AF_INET;
    a4->sin_port = htons(address.port);
    inet_pton(AF_INET, address.host.c_str(), &a4->sin_addr);
    len = sizeof *a4;
  }
  std::string where = address.ipv6 ? fmt::format("[{}]:{}", address.host, address.port)
                                   : fmt::format("{}:{}", address.host, address.port);
  if (bind(s.fd_, reinterpret_cast<struct sockaddr*>(&ss), len) != 0) {
    return Status::FromErrno("bind " + where, errno);
  }
  if (listen(s.fd_, 128) != 0) return Status::FromErrno("listen " + where, errno);
  if (getsockname(s.fd_, reinterpret_cast<struct sockaddr*>(&ss), &len) == 0) {
    s.address_.port = ntohs(address.ipv6 ? reinterpret_cast<struct sockaddr_in6*>(&ss)->sin6_port
                                         : reinterpret_cast<struct sockaddr_in*>(&ss)->sin_port);
  }
  return s;
}

HttpServer::HttpServer(HttpServer&& o) noexcept
    : fd_(o.fd_),
      address_(std::move(o.address_)),
      options_(o.options_),
      connections_(std::move(o.connections_)),
      counts_(o.counts_) {
  o.fd_ = -1;
}

HttpServer& HttpServer::operator=(HttpServer&& o) noexcept {
  std::swap(fd_, o.fd_);
  std::swap(address_, o.address_);
  std::swap(options_, o.options_);
  std::swap(connections_, o.connections_);
  std::swap(counts_, o.counts_);
  return *this;
}

HttpServer::~HttpServer() {
  if (fd_ >= 0) close(fd_);
}

std::string HttpServer::bound_address() const {
  return address_.ipv6 ? fmt::format("[{}]:{}", address_.host, address_.port)
                       : fmt::format("{}:{}", address_.host, address_.port);
}

uint16_t HttpServer::port() const { return address_.port; }

void HttpServer::Accept() {
  for (;;) {
    int fd = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or EMFILE and friends: try again next round
    if (static_cast<int>(connections_.size()) >= options_.max_connections) {
      ++counts_.refused;
      std::string busy = SerializeHttpResponse(
          {503, "text/plain; charset=utf-8", "too many connections\n", {}}, false);
      (void)!send(fd, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      close(fd);
      continue;
    }
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    c->deadline_ns = MonotonicNs() + Ns(options_.request_timeout_seconds);
    connections_.push_back(std::move(c));
  }
}

void HttpServer::Respond(Connection& c, const HttpResponse& response, bool head_only) {
  ++counts_.requests;
  c.out = SerializeHttpResponse(response, head_only);
  c.sent = 0;
  c.in.clear();
  c.in.shrink_to_fit();
  c.state = Connection::State::kWriting;
  c.deadline_ns = MonotonicNs() + Ns(options_.write_timeout_seconds);
  OnWritable(c);
}

void HttpServer::OnReadable(Connection& c, const Handler& handler) {
  char buffer[4096];
  for (;;) {
    ssize_t n = recv(c.fd, buffer, sizeof buffer, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) c.state = Connection::State::kClosed;
      break;
    }
    if (n == 0) {  // the client is done sending
      if (c.state == Connection::State::kReading) {
        // A head cut short: nobody is left to answer.
        c.state = Connection::State::kClosed;
      } else {
        c.state = Connection::State::kClosed;
      }
      return;
    }
    if (c.state == Connection::State::kLingering) continue;  // discarded
    c.in.append(buffer, static_cast<size_t>(n));
    if (c.in.size() > options_.max_head_bytes + sizeof buffer) break;
  }
  if (c.state != Connection::State::kReading) return;
  HttpParseResult r = ParseHttpRequestHead(c.in, options_.max_head_bytes);
  if (r.state == HttpParseResult::State::kIncomplete) return;
  if (r.state == HttpParseResult::State::kError) {
    ++counts_.bad_requests;
    Respond(c, {r.status, "text/plain; charset=utf-8", r.reason + "\n", {}}, false);
    return;
  }
  bool head_only = r.head.method == "HEAD";
  if (r.head.method != "GET" && !head_only) {
    Respond(c,
            {405,
             "text/plain; charset=utf-8",
             "only GET and HEAD are served\n",
             {{"Allow", "GET, HEAD"}}},
            false);
    return;
  }
  Respond(c, handler(r.head), head_only);
}

void HttpServer::OnWritable(Connection& c) {
  while (c.sent < c.out.size()) {
    ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) c.state = Connection::State::kClosed;
      return;
    }
    c.sent += static_cast<size_t>(n);
  }
  std::string().swap(c.out);
  shutdown(c.fd, SHUT_WR);
  c.state = Connection::State::kLingering;
  c.deadline_ns = MonotonicNs() + Ns(kLingerSeconds);
}

Status HttpServer::Serve(const Handler& handler, const std::vector<Watch>& watches,
                         double tick_seconds, const std::function<void()>& tick) {
  int64_t next_tick = MonotonicNs();
  std::vector<struct pollfd> fds;
  for (;;) {
    int64_t now = MonotonicNs();
    if (tick && now >= next_tick) {
      tick();
      next_tick = now + Ns(tick_seconds);
    }
    // Expire connections past their deadline.
    for (auto& c : connections_) {
      if (c->state != Connection::State::kClosed && now >= c->deadline_ns) {
        if (c->state != Connection::State::kLingering) ++counts_.timeouts;
        c->state = Connection::State::kClosed;
      }
    }
    std::erase_if(connections_, [](const std::unique_ptr<Connection>& c) {
      return c->state == Connection::State::kClosed;
    });
    counts_.open = static_cast<int>(connections_.size());
    int64_t wake = tick ? next_tick : now + Ns(3600);
    fds.clear();
    fds.push_back({fd_, POLLIN, 0});
    for (const Watch& w : watches) fds.push_back({w.fd, POLLIN, 0});
    for (auto& c : connections_) {
      short events = c->state == Connection::State::kWriting ? POLLOUT : POLLIN;
      fds.push_back({c->fd, events, 0});
      wake = std::min(wake, c->deadline_ns);
    }
    int timeout_ms =
        static_cast<int>(std::clamp<int64_t>((wake - now + 999999) / 1000000, 0, 60000));
    int n = poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("poll", errno);
    }
    if (n == 0) continue;
    size_t i = 1;
    for (const Watch& w : watches) {
      if (fds[i++].revents & (POLLIN | POLLERR | POLLHUP)) {
        if (!w.on_readable()) return Status::Ok();
      }
    }
    // Connections first (fds holds them in order), then new ones.
    size_t count = connections_.size();
    for (size_t k = 0; k < count; ++k, ++i) {
      Connection& c = *connections_[k];
      short rev = fds[i].revents;
      if (!rev) continue;
      if (c.state == Connection::State::kWriting && (rev & POLLOUT)) {
        OnWritable(c);
      } else if (rev & (POLLIN | POLLHUP | POLLERR)) {
        OnReadable(c, handler);
      }
    }
    if (fds[0].revents & POLLIN) Accept();
  }
}

}  // namespace stallscope
