// A minimal TCP sender and receiver for the link-rate test, run inside the
// emulated hosts:
//
//   tcp_rate_helper receive PORT
//     listens on every address, prints "listening", accepts one connection,
//     reads it to the end and prints "received <bytes> <seconds>", the
//     seconds from the first byte to the sender's close;
//   tcp_rate_helper send ADDRESS PORT BYTES
//     connects (retrying while the port is not open yet), sends BYTES zero
//     bytes, closes its side, waits for the receiver's close (so every byte
//     arrived) and prints "sent <bytes>".
//
// Every blocking call is bounded (60 s); exits 1 with a message on error.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kIoTimeoutSeconds = 60;
constexpr auto kConnectDeadline = std::chrono::seconds(30);
constexpr size_t kChunkBytes = 64 * 1024;

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "tcp_rate_helper: %s: %s\n", what, std::strerror(errno));
  std::exit(1);
}

void SetIoTimeouts(int fd) {
  timeval timeout{kIoTimeoutSeconds, 0};
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) !=
          0 ||
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout)) !=
          0) {
    Die("setsockopt");
  }
}

int Receive(int port) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0) Die("socket");
  const int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address),
             sizeof(address)) != 0) {
    Die("bind");
  }
  if (::listen(listener, 1) != 0) Die("listen");
  std::printf("listening\n");
  std::fflush(stdout);
  pollfd waiting{listener, POLLIN, 0};
  if (::poll(&waiting, 1, kIoTimeoutSeconds * 1000) != 1) {
    errno = ETIMEDOUT;
    Die("accept");
  }
  const int connection = ::accept(listener, nullptr, nullptr);
  if (connection < 0) Die("accept");
  SetIoTimeouts(connection);
  std::vector<char> buffer(kChunkBytes);
  int64_t received = 0;
  Clock::time_point first_byte;
  while (true) {
    const ssize_t n = ::read(connection, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) Die("read");
    if (n == 0) break;
    if (received == 0) first_byte = Clock::now();
    received += n;
  }
  const double seconds =
      std::chrono::duration<double>(Clock::now() - first_byte).count();
  ::close(connection);
  std::printf("received %lld %.6f\n", static_cast<long long>(received),
              seconds);
  return 0;
}

int Send(const char* host, int port, int64_t bytes) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host, &address.sin_addr) != 1) {
    errno = EINVAL;
    Die("address");
  }
  // The receiver may not listen yet: a refused connection is retried until
  // the deadline, the wait between tries only pacing the retries.
  const Clock::time_point deadline = Clock::now() + kConnectDeadline;
  int fd = -1;
  while (true) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) Die("socket");
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) ==
        0) {
      break;
    }
    if (errno != ECONNREFUSED || Clock::now() >= deadline) Die("connect");
    ::close(fd);
    ::poll(nullptr, 0, 20);
  }
  SetIoTimeouts(fd);
  const std::vector<char> chunk(kChunkBytes, 0);
  int64_t left = bytes;
  while (left > 0) {
    const size_t size =
        static_cast<size_t>(std::min<int64_t>(left, kChunkBytes));
    const ssize_t n = ::write(fd, chunk.data(), size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) Die("write");
    left -= n;
  }
  if (::shutdown(fd, SHUT_WR) != 0) Die("shutdown");
  char ignored[256];
  while (true) {
    const ssize_t n = ::read(fd, ignored, sizeof(ignored));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) Die("read");
    if (n == 0) break;
  }
  ::close(fd);
  std::printf("sent %lld\n", static_cast<long long>(bytes));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 2 && args[0] == "receive") {
    return Receive(std::atoi(args[1].c_str()));
  }
  if (args.size() == 4 && args[0] == "send") {
    return Send(args[1].c_str(), std::atoi(args[2].c_str()),
                std::atoll(args[3].c_str()));
  }
  std::fprintf(stderr,
               "usage: tcp_rate_helper receive PORT | send ADDRESS PORT "
               "BYTES\n");
  return 2;
}
