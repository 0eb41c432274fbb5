// What the exporter answers to one HTTP request, decided without I/O: the
// request line and headers come parsed by libmicrohttpd (export/http_server),
// and this file says which status goes back (RFC 9110): 200 with the metrics
// for GET or HEAD /metrics, 404 elsewhere, 405 with Allow for other methods,
// 413 for a request carrying a body, 401 with WWW-Authenticate when basic
// auth is configured and the credentials are missing or wrong. Also the
// --listen address. Pure and thread-safe; a fuzz target covers it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace stallscope {

struct HttpRequest {
  std::string_view method;         // "GET"
  std::string_view path;           // "/metrics" (libmicrohttpd strips the query)
  std::string_view authorization;  // the Authorization header, or empty
  bool has_body = false;           // Content-Length > 0 or a chunked body
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones (Allow)
};

// Says whether a user name and password are good; empty when no auth is set.
using PasswordCheck = std::function<bool(std::string_view user, std::string_view password)>;

// "Basic dXNlcjpwYXNz" -> {"user", "pass"}; false when it is not basic auth
// in valid base64 with a colon (RFC 7617).
bool ParseBasicAuth(std::string_view header, std::string& user, std::string& password);

// The answer to one request. metrics() is called only for an authorized
// GET or HEAD of /metrics.
HttpResponse AnswerHttpRequest(const HttpRequest& request, const PasswordCheck& check_password,
                               const std::function<HttpResponse()>& metrics);

// The 503 sent when more requests are in flight than the bound.
HttpResponse BusyResponse();

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
