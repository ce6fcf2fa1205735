#include "bench/aggregator_load/metrics_scrape.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace entrograd::bench {

namespace {

// Closes the socket on every return path.
class Socket {
 public:
  Socket() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

absl::Status Unavailable(absl::string_view what, int port) {
  return absl::UnavailableError(absl::StrCat(what, " 127.0.0.1:", port,
                                             "/metrics: ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<std::string> ScrapeMetrics(int port, absl::Duration timeout) {
  Socket socket;
  if (socket.fd() < 0) return Unavailable("socket for", port);
  const timeval tv = absl::ToTimeval(timeout);
  ::setsockopt(socket.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(socket.fd(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(socket.fd(), reinterpret_cast<const sockaddr*>(&address),
                sizeof(address)) != 0) {
    return Unavailable("connect to", port);
  }
  const std::string request =
      "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  if (::send(socket.fd(), request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return Unavailable("send to", port);
  }
  std::string response;
  char buffer[16384];
  while (true) {
    const ssize_t got = ::recv(socket.fd(), buffer, sizeof(buffer), 0);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      return Unavailable("read from", port);
    }
    response.append(buffer, static_cast<size_t>(got));
  }
  const size_t body = response.find("\r\n\r\n");
  if (body == std::string::npos ||
      !absl::StartsWith(response, "HTTP/1.") ||
      response.substr(9, 3) != "200") {
    return absl::InternalError(absl::StrCat(
        "GET 127.0.0.1:", port, "/metrics: ", response.substr(0, 200)));
  }
  return response.substr(body + 4);
}

std::optional<double> SampleValue(const std::string& exposition,
                                  const std::string& series) {
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    if (!absl::StartsWith(line, series) || line.size() <= series.size() ||
        line[series.size()] != ' ') {
      continue;
    }
    const std::string value(line.substr(series.size() + 1));
    char* end = nullptr;
    const double parsed = std::strtod(value.c_str(), &end);
    if (end == value.c_str()) return std::nullopt;
    return parsed;
  }
  return std::nullopt;
}

double SumSamples(const std::string& exposition, const std::string& metric) {
  double sum = 0.0;
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    if (!absl::StartsWith(line, metric) || line.size() <= metric.size() ||
        (line[metric.size()] != ' ' && line[metric.size()] != '{')) {
      continue;
    }
    const size_t space = line.rfind(' ');
    sum += std::strtod(std::string(line.substr(space + 1)).c_str(), nullptr);
  }
  return sum;
}

}  // namespace entrograd::bench
