// A port where a shard used to be, as the clients see it while the shard is
// down: every connection is reset at once. Unlike a closed port, it counts
// the attempts, so a test can wait until the clients really tried to reach
// the dead shard (and are backing off) instead of sleeping and hoping they
// did.
#ifndef ENTROGRAD_TESTS_SUPPORT_REFUSING_LISTENER_H_
#define ENTROGRAD_TESTS_SUPPORT_REFUSING_LISTENER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace entrograd::testing {

class RefusingListener {
 public:
  // Listens on 127.0.0.1:`port`. A port a server just released may still be
  // held for a moment: binding is retried until `timeout`. Errors:
  // UNAVAILABLE when the port cannot be bound by then.
  static absl::StatusOr<std::unique_ptr<RefusingListener>> Start(
      int port, absl::Duration timeout = absl::Seconds(10)) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Errno("socket");
    // Not SO_REUSEPORT: a server binding the port while this listens must
    // fail, not share the connections with it.
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const absl::Time deadline = absl::Now() + timeout;
    while (::bind(fd, reinterpret_cast<const sockaddr*>(&address),
                  sizeof(address)) != 0) {
      if (errno != EADDRINUSE || absl::Now() > deadline) {
        absl::Status status = Errno(absl::StrCat("bind 127.0.0.1:", port));
        ::close(fd);
        return status;
      }
      absl::SleepFor(absl::Milliseconds(10));  // polls until the port is free
    }
    if (::listen(fd, 128) != 0) {
      absl::Status status = Errno("listen");
      ::close(fd);
      return status;
    }
    return std::unique_ptr<RefusingListener>(new RefusingListener(fd));
  }

  // Stops listening: the port is closed (and free to bind) on return.
  ~RefusingListener() {
    stop_.store(true);
    thread_.join();
    ::close(fd_);
  }

  RefusingListener(const RefusingListener&) = delete;
  RefusingListener& operator=(const RefusingListener&) = delete;

  // Connections accepted and reset so far.
  int64_t connections() const { return connections_.load(); }

 private:
  explicit RefusingListener(int fd)
      : fd_(fd), thread_([this] { AcceptLoop(); }) {}

  static absl::Status Errno(const std::string& what) {
    return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(errno)));
  }

  void AcceptLoop() {
    while (!stop_.load()) {
      pollfd ready{fd_, POLLIN, 0};
      // The timeout only bounds how long the destructor waits for this loop.
      if (::poll(&ready, 1, /*timeout_ms=*/10) <= 0) continue;
      const int connection = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (connection < 0) continue;
      // Linger 0: close sends a reset, as a port nobody listens on does
      // (and leaves no TIME_WAIT behind on the shard's port).
      const linger reset{1, 0};
      ::setsockopt(connection, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
      ::close(connection);
      connections_.fetch_add(1);
    }
  }

  const int fd_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> connections_{0};
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_SUPPORT_REFUSING_LISTENER_H_
