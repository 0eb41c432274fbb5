#include "export/http_request.h"

#include <arpa/inet.h>

#include <algorithm>

#include "core/text.h"

namespace stallscope {
namespace {

// RFC 9110 tchar.
bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

HttpParseResult Error(int status, std::string reason) {
  HttpParseResult r;
  r.state = HttpParseResult::State::kError;
  r.status = status;
  r.reason = std::move(reason);
  return r;
}

// A request target of visible ASCII: origin form "/..." or absolute form
// "http://host/...", whose path we keep.
bool ParseTarget(std::string_view target, std::string& path) {
  if (target.empty() || target.size() > 2048) return false;
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return false;
    }
  }
  std::string_view rest = target;
  if (rest.starts_with("http://") || rest.starts_with("https://")) {
    rest.remove_prefix(rest.find("//") + 2);
    size_t slash = rest.find('/');
    rest = slash == std::string_view::npos ? std::string_view("/") : rest.substr(slash);
  }
  if (rest.empty() || rest[0] != '/') return false;
  size_t end = rest.find_first_of("?#");
  path = std::string(rest.substr(0, end));
  return true;
}

// The next line of the head starting at `pos`, without its CRLF / LF.
// False when no line end has arrived yet.
bool NextLine(std::string_view buffer, size_t& pos, std::string_view& line) {
  size_t lf = buffer.find('\n', pos);
  if (lf == std::string_view::npos) return false;
  size_t end = lf;
  if (end > pos && buffer[end - 1] == '\r') --end;
  line = buffer.substr(pos, end - pos);
  pos = lf + 1;
  return true;
}

HttpParseResult ParseRequestLine(std::string_view line) {
  HttpParseResult r;
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Error(400, "the request line is not METHOD TARGET HTTP/1.x");
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method) || method.size() > 32) return Error(400, "the method is not a token");
  if (!version.starts_with("HTTP/") || version.size() != 8 || version[6] != '.' ||
      version[5] < '0' || version[5] > '9' || version[7] < '0' || version[7] > '9') {
    return Error(400, "the request line does not end in HTTP/x.y");
  }
  if (version[5] != '1') return Error(505, "only HTTP/1.x is spoken here");
  if (!ParseTarget(target, r.head.path)) return Error(400, "the request target is not a path");
  r.head.method = std::string(method);
  r.head.target = std::string(target);
  r.head.minor_version = version[7] - '0';
  return r;
}

}  // namespace

HttpParseResult ParseHttpRequestHead(std::string_view buffer, size_t max_head_bytes) {
  size_t pos = 0;
  std::string_view line;
  // Empty lines before the request line are skipped (RFC 9112 2.2).
  for (;;) {
    size_t before = pos;
    if (!NextLine(buffer, pos, line)) {
      if (buffer.size() - before > max_head_bytes || buffer.size() > max_head_bytes) {
        return Error(431, "the request head is larger than the server accepts");
      }
      // A request line that is already invalid fails now, not at the timeout.
      std::string_view partial = buffer.substr(before);
      for (char c : partial) {
        if (c != '\r' && (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)) {
          return Error(400, "control character in the request line");
        }
      }
      return {};
    }
    if (!line.empty()) break;
  }
  HttpParseResult r = ParseRequestLine(line);
  if (r.state == HttpParseResult::State::kError) return r;
  for (;;) {
    if (!NextLine(buffer, pos, line)) {
      if (buffer.size() > max_head_bytes) {
        return Error(431, "the request head is larger than the server accepts");
      }
      return r;  // incomplete
    }
    if (pos > max_head_bytes)
      return Error(431, "the request head is larger than the server accepts");
    if (line.empty()) break;
    if (line[0] == ' ' || line[0] == '\t') return Error(400, "obsolete header line folding");
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      return Error(400, "a header line is not NAME: VALUE");
    }
    for (char c : line.substr(colon + 1)) {
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
        return Error(400, "control character in a header value");
      }
    }
  }
  r.state = HttpParseResult::State::kComplete;
  r.head.head_bytes = pos;
  return r;
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
