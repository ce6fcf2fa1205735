// Bad flags: the binary must refuse to start, exit non-zero, and name the
// flag on stderr, before it serves anything.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aggregator/process/aggregator_process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace entrograd::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Runs the binary with `flags` (plus loopback ports, so a binary that
// wrongly accepts them binds nothing public) and expects a prompt non-zero
// exit whose stderr contains every one of `must_name`.
void ExpectRejected(std::vector<std::string> flags,
                    const std::vector<std::string>& must_name) {
  bool has_listen = false;
  for (const std::string& flag : flags) {
    has_listen |= flag.rfind("--listen=", 0) == 0;
  }
  if (!has_listen) flags.push_back("--listen=127.0.0.1:0");
  bool has_metrics_listen = false;
  for (const std::string& flag : flags) {
    has_metrics_listen |= flag.rfind("--metrics_listen=", 0) == 0;
  }
  if (!has_metrics_listen) flags.push_back("--metrics_listen=127.0.0.1:0");
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Spawn(AggregatorBinaryPath(), flags);
  ASSERT_TRUE(child.ok()) << child.status();
  absl::StatusOr<int> status = (*child)->Wait(absl::Seconds(10));
  ASSERT_TRUE(status.ok())
      << "the binary accepted the flags and kept running: " << status.status()
      << "\nstdout: " << (*child)->Stdout()
      << "\nstderr: " << (*child)->Stderr();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) != 0)
      << "expected a clean non-zero exit, got " << DescribeWaitStatus(*status)
      << "\nstderr: " << (*child)->Stderr();
  const std::string err = (*child)->Stderr();
  for (const std::string& name : must_name) {
    EXPECT_THAT(err, HasSubstr(name)) << "stderr does not name " << name;
  }
  EXPECT_THAT((*child)->Stdout(), Not(HasSubstr("serving on port")));
}

TEST(BadFlagsTest, ResourceLimitsOutOfRange) {
  ExpectRejected({"--max_layers=0"}, {"--max_layers"});
  ExpectRejected({"--max_rounds_per_job=0"}, {"--max_rounds_per_job"});
  ExpectRejected({"--max_incarnation_lead=-1s"}, {"--max_incarnation_lead"});
  // A stream queue smaller than one message could end every stream.
  ExpectRejected({"--max_message_bytes=65536", "--max_stream_queue_bytes=4096"},
                 {"--max_stream_queue_bytes"});
  ExpectRejected({"--merge_threads=-1"}, {"--merge_threads"});
  ExpectRejected({"--merge_threads=1025"}, {"--merge_threads"});
}

TEST(BadFlagsTest, NegativeRoundTimeout) {
  ExpectRejected({"--round_timeout=-1s"}, {"--round_timeout"});
}

TEST(BadFlagsTest, ZeroRoundTimeout) {
  ExpectRejected({"--round_timeout=0s"}, {"--round_timeout"});
}

TEST(BadFlagsTest, ListenNotHostPort) {
  ExpectRejected({"--listen=nonsense"}, {"--listen"});
}

TEST(BadFlagsTest, HealthListenNotHostPort) {
  ExpectRejected({"--health_listen=nonsense"}, {"--health_listen"});
}

TEST(BadFlagsTest, TlsCertWithoutKey) {
  ScopedTempDir dir;
  const std::string cert =
      dir.WriteFile("cert.pem", "-----BEGIN CERTIFICATE-----\n");
  ExpectRejected({absl::StrCat("--tls_cert=", cert)}, {"--tls_cert", "--tls_key"});
}

TEST(BadFlagsTest, TokenFileMissing) {
  ExpectRejected({"--token_file=/nonexistent"}, {"--token_file", "/nonexistent"});
}

TEST(BadFlagsTest, TokenFileMalformed) {
  ScopedTempDir dir;
  const std::string tokens =
      dir.WriteFile("tokens", "job-a token-a\njob-b token-b extra-field\n");
  ExpectRejected({absl::StrCat("--token_file=", tokens)}, {"--token_file"});
}

// A TCP socket listening on 127.0.0.1:<a free port>, without SO_REUSEPORT,
// so nothing else can bind that port while it is open.
class PortHolder {
 public:
  PortHolder() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = 0;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (fd_ < 0 ||
        ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::listen(fd_, 1) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ADD_FAILURE() << "cannot hold a loopback port: " << std::strerror(errno);
      return;
    }
    port_ = ntohs(address.sin_port);
  }
  ~PortHolder() {
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A port that cannot be bound is an error of the flag that names it, with a
// clean exit, like any other bad flag.
TEST(BadFlagsTest, ListenPortInUse) {
  PortHolder holder;
  ASSERT_GT(holder.port(), 0);
  ExpectRejected({absl::StrCat("--listen=127.0.0.1:", holder.port())},
                 {"--listen"});
}

TEST(BadFlagsTest, MetricsListenPortInUse) {
  PortHolder holder;
  ASSERT_GT(holder.port(), 0);
  const std::string address = absl::StrCat("127.0.0.1:", holder.port());
  ExpectRejected({absl::StrCat("--metrics_listen=", address)},
                 {"metrics", address});
}

TEST(BadFlagsTest, UnknownFlag) {
  ExpectRejected({"--no_such_flag=1"}, {"no_such_flag"});
}

}  // namespace
}  // namespace entrograd::testing
