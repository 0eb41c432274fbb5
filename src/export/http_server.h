// A small HTTP/1.1 server for the exporter: one thread, one poll() loop, no
// dependency beyond the C library.
//
// It answers one request per connection and closes it (Connection: close):
// Prometheus reconnects per scrape without complaint, and there is no
// keep-alive state to bound. What keeps a hostile or broken client from
// hurting it:
//  - a whole request head must arrive within request_timeout (counted from
//    accept, not per byte: a slowloris client trickling one byte a second
//    is cut off at the same moment as a silent one);
//  - the head is at most max_head_bytes (431 beyond);
//  - at most max_connections are open; one more is answered 503 and closed;
//  - an answer must drain within write_timeout, and every socket is
//    non-blocking, so no client can stall the loop.
// The loop also watches the caller's extra descriptors (the hook socket, a
// signalfd) and calls a tick every tick_seconds. Not thread-safe; one owner.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "export/http_request.h"

namespace stallscope {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones (Allow)
};

struct HttpServerOptions {
  int max_connections = 64;
  size_t max_head_bytes = 8192;
  double request_timeout_seconds = 5;
  double write_timeout_seconds = 10;
};

// Status line text and the bytes sent for a response (HEAD: no body).
std::string SerializeHttpResponse(const HttpResponse& response, bool head_only);

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequestHead&)>;
  // A descriptor to watch for input; the callback returns false to stop.
  struct Watch {
    int fd;
    std::function<bool()> on_readable;
  };

  static Result<HttpServer> Listen(const ListenAddress& address, const HttpServerOptions& options);
  HttpServer(HttpServer&&) noexcept;
  HttpServer& operator=(HttpServer&&) noexcept;
  ~HttpServer();

  // "127.0.0.1:40123": the bound address, with the port the kernel chose.
  std::string bound_address() const;
  uint16_t port() const;

  // Serves until a watch callback returns false. tick runs every
  // tick_seconds (and once at the start).
  Status Serve(const Handler& handler, const std::vector<Watch>& watches, double tick_seconds,
               const std::function<void()>& tick);

  // Counters for the exporter's own metrics.
  struct Counts {
    uint64_t requests = 0;      // answered with any status
    uint64_t bad_requests = 0;  // 4xx/5xx from the parser
    uint64_t timeouts = 0;      // connections cut for a slow head or a slow read
    uint64_t refused = 0;       // over max_connections: 503
    int open = 0;
  };
  const Counts& counts() const { return counts_; }

 private:
  struct Connection;
  HttpServer() = default;
  void Accept();
  void OnReadable(Connection& c, const Handler& handler);
  void OnWritable(Connection& c);
  void Respond(Connection& c, const HttpResponse& response, bool head_only);

  int fd_ = -1;
  ListenAddress address_;
  HttpServerOptions options_;
  std::vector<std::unique_ptr<Connection>> connections_;
  Counts counts_;
};

}  // namespace stallscope
