// A tiny blocking HTTP/1.0 GET client over POSIX sockets, for scraping the
// metrics endpoint in tests. IPv4 literal hosts only; every socket operation
// is bounded by `timeout`.
#ifndef ENTROGRAD_TESTS_AGGREGATOR_METRICS_HTTP_GET_H_
#define ENTROGRAD_TESTS_AGGREGATOR_METRICS_HTTP_GET_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace entrograd::aggregator::testing {

struct HttpResponse {
  int status_code = 0;
  std::string headers;  // status line and header lines, CRLF separated
  std::string body;
};

namespace http_get_internal {

// Closes the descriptor on scope exit.
class SocketCloser {
 public:
  explicit SocketCloser(int fd) : fd_(fd) {}
  ~SocketCloser() { ::close(fd_); }
  SocketCloser(const SocketCloser&) = delete;
  SocketCloser& operator=(const SocketCloser&) = delete;

 private:
  int fd_;
};

inline absl::Status ErrnoError(absl::string_view what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(errno)));
}

}  // namespace http_get_internal

// GETs http://host:port/path, reading until the server closes. Returns
// UNAVAILABLE on a socket error or timeout, INTERNAL on a response that is
// not HTTP.
inline absl::StatusOr<HttpResponse> HttpGet(
    const std::string& host, int port, const std::string& path,
    std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  using http_get_internal::ErrnoError;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("not an IPv4 address: ", host));
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return ErrnoError("socket");
  http_get_internal::SocketCloser closer(fd);

  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  // On Linux SO_SNDTIMEO also bounds connect().
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0) {
    return ErrnoError("setsockopt");
  }
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address),
                sizeof(address)) != 0) {
    return ErrnoError(absl::StrCat("connect to ", host, ":", port));
  }

  const std::string request = absl::StrCat(
      "GET ", path, " HTTP/1.0\r\nHost: ", host, ":", port, "\r\n\r\n");
  for (std::size_t sent = 0; sent < request.size();) {
    const ssize_t n =
        ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("send");
    }
    sent += static_cast<std::size_t>(n);
  }

  std::string raw;
  char buffer[4096];
  while (true) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("recv (timeout or reset)");
    }
    raw.append(buffer, static_cast<std::size_t>(n));
  }

  const std::size_t header_end = raw.find("\r\n\r\n");
  if (header_end == std::string::npos || raw.compare(0, 5, "HTTP/") != 0) {
    return absl::InternalError(absl::StrCat("not an HTTP response: ", raw));
  }
  HttpResponse response;
  response.headers = raw.substr(0, header_end);
  response.body = raw.substr(header_end + 4);
  // Status line: "HTTP/1.x NNN Reason".
  const std::size_t space = response.headers.find(' ');
  if (space == std::string::npos ||
      !absl::SimpleAtoi(
          absl::string_view(response.headers).substr(space + 1, 3),
          &response.status_code)) {
    return absl::InternalError(
        absl::StrCat("bad status line: ", response.headers));
  }
  return response;
}

}  // namespace entrograd::aggregator::testing

#endif  // ENTROGRAD_TESTS_AGGREGATOR_METRICS_HTTP_GET_H_
