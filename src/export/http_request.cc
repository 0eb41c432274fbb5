#include "export/http_request.h"

#include <arpa/inet.h>

#include <algorithm>

#include "core/text.h"

namespace stallscope {
namespace {

// The value of one base64 digit (RFC 4648), or -1.
int Base64Digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool DecodeBase64(std::string_view text, std::string& out) {
  out.clear();
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  uint32_t bits = 0;
  int count = 0;
  for (char c : text) {
    int d = Base64Digit(c);
    if (d < 0) return false;
    bits = (bits << 6) | static_cast<uint32_t>(d);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xff));
    }
  }
  return count < 6;  // a lone trailing digit is not base64
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return (x | 0x20) == (y | 0x20);
         });
}

HttpResponse Unauthorized() {
  return {401,
          "text/plain; charset=utf-8",
          "unauthorized: this exporter wants basic auth (see its web config)\n",
          {{"WWW-Authenticate", "Basic realm=\"stallscope exporter\", charset=\"UTF-8\""}}};
}

}  // namespace

bool ParseBasicAuth(std::string_view header, std::string& user, std::string& password) {
  constexpr std::string_view kScheme = "basic ";
  if (header.size() < kScheme.size() ||
      !EqualsIgnoringCase(header.substr(0, kScheme.size()), kScheme)) {
    return false;
  }
  std::string_view encoded = header.substr(kScheme.size());
  while (!encoded.empty() && encoded.front() == ' ') encoded.remove_prefix(1);
  while (!encoded.empty() && encoded.back() == ' ') encoded.remove_suffix(1);
  std::string decoded;
  if (!DecodeBase64(encoded, decoded)) return false;
  size_t colon = decoded.find(':');
  if (colon == std::string::npos) return false;
  user = decoded.substr(0, colon);
  password = decoded.substr(colon + 1);
  return true;
}

HttpResponse AnswerHttpRequest(const HttpRequest& request, const PasswordCheck& check_password,
                               const std::function<HttpResponse()>& metrics) {
  if (check_password) {
    std::string user, password;
    if (!ParseBasicAuth(request.authorization, user, password) || !check_password(user, password)) {
      return Unauthorized();
    }
  }
  if (request.method != "GET" && request.method != "HEAD") {
    return {405,
            "text/plain; charset=utf-8",
            "method not allowed: only GET and HEAD\n",
            {{"Allow", "GET, HEAD"}}};
  }
  if (request.has_body) {
    return {413, "text/plain; charset=utf-8", "content too large: a scrape carries no body\n", {}};
  }
  if (request.path != "/metrics") {
    return {404, "text/plain; charset=utf-8", "not found: the metrics are at /metrics\n", {}};
  }
  return metrics();
}

HttpResponse BusyResponse() {
  return {503,
          "text/plain; charset=utf-8",
          "service unavailable: too many scrapes at once; try again\n",
          {{"Retry-After", "1"}}};
}

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  ListenAddress a;
  std::string_view host, port;
  if (text.starts_with("[")) {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Status::InvalidArgument(std::string(text) + ": expected [IPv6]:PORT");
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    a.ipv6 = true;
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return Status::InvalidArgument(std::string(text) +
                                     ": expected HOST:PORT, e.g. 127.0.0.1:9400");
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return Status::InvalidArgument(std::string(text) +
                                     ": put an IPv6 address in brackets: [::1]:9400");
    }
  }
  std::optional<uint64_t> p = ParseUint(port);
  if (!p || *p > 65535) {
    return Status::InvalidArgument(std::string(text) + ": the port must be a number 0..65535");
  }
  a.port = static_cast<uint16_t>(*p);
  if (host == "localhost") host = "127.0.0.1";
  a.host = std::string(host);
  unsigned char bytes[16];
  if (a.ipv6) {
    if (inet_pton(AF_INET6, a.host.c_str(), bytes) != 1) {
      return Status::InvalidArgument(std::string(text) + ": not an IPv6 address");
    }
    static const unsigned char kLoop6[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    a.loopback = std::equal(bytes, bytes + 16, kLoop6);
  } else {
    if (inet_pton(AF_INET, a.host.c_str(), bytes) != 1) {
      return Status::InvalidArgument(std::string(text) +
                                     ": the host must be an IPv4 address, [IPv6] or localhost");
    }
    a.loopback = bytes[0] == 127;
  }
  return a;
}

}  // namespace stallscope
