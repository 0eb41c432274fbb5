#include "net/socket_io.h"

#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <string>

namespace stallscope::net {

Status WaitFor(int fd, short events, int64_t deadline_ns, const char* what) {
  while (true) {
    int64_t left_ns = deadline_ns - MonotonicNs();
    if (left_ns <= 0) return Status::Unavailable(std::string(what) + ": timed out");
    pollfd p{fd, events, 0};
    int timeout_ms = static_cast<int>(std::min<int64_t>(left_ns / 1000000 + 1, 1 << 30));
    int rc = ::poll(&p, 1, timeout_ms);
    if (rc > 0) return Status::Ok();
    if (rc < 0 && errno != EINTR) return Status::FromErrno(what, errno);
  }
}

Status WriteAll(int fd, std::span<const uint8_t> bytes, int64_t deadline_ns) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (Status s = WaitFor(fd, POLLOUT, deadline_ns, "send"); !s.ok()) return s;
      continue;
    }
    return Status::FromErrno("send", errno);
  }
  return Status::Ok();
}

Status ReadExact(int fd, std::span<uint8_t> bytes, int64_t deadline_ns) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::recv(fd, bytes.data() + done, bytes.size() - done, MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      return done == 0 ? Status::NotFound("closed by the peer")
                       : Status::Unavailable("closed by the peer in the middle of a message");
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (Status s = WaitFor(fd, POLLIN, deadline_ns, "receive"); !s.ok()) return s;
      continue;
    }
    return Status::FromErrno("receive", errno);
  }
  return Status::Ok();
}

Result<Message> ReadMessage(int fd, int64_t deadline_ns) {
  std::array<uint8_t, kHeaderBytes + kMaxBodyBytes> buffer;
  std::span<uint8_t> head(buffer.data(), kHeaderBytes);
  if (Status s = ReadExact(fd, head, deadline_ns); !s.ok()) return s;
  Result<Header> header = ParseHeader(head);
  if (!header.ok()) return header.status();
  std::span<uint8_t> body(buffer.data() + kHeaderBytes, header->body_bytes);
  if (Status s = ReadExact(fd, body, deadline_ns); !s.ok()) {
    if (s.IsNotFound()) return Status::Unavailable("closed by the peer in the middle of a message");
    return s;
  }
  return ParseMessage(std::span<const uint8_t>(buffer.data(), kHeaderBytes + header->body_bytes));
}

Status WriteMessage(int fd, const Message& message, int64_t deadline_ns) {
  std::vector<uint8_t> bytes = Encode(message);
  return WriteAll(fd, bytes, deadline_ns);
}

}  // namespace stallscope::net
