// TLS and bearer tokens end to end: a CA, a server certificate for
// 127.0.0.1/localhost and a client certificate are made with /usr/bin/openssl
// at test time; the binary serves TLS with a token file of two jobs. Also the
// start-up warning on stderr when it serves plaintext.
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "aggregator/process/aggregator_process.h"
#include "aggregator/process/process_test_util.h"
#include "aggregator/support/test_worker.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kOpenssl[] = "/usr/bin/openssl";

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

struct Certificates {
  std::string ca_pem;  // contents
  std::string ca_file, server_cert, server_key, client_cert, client_key;
  std::string client_cert_pem, client_key_pem;  // contents
};

// Runs openssl with `args`; empty on success, else what went wrong.
std::string Openssl(const std::vector<std::string>& args) {
  absl::StatusOr<CommandResult> result =
      RunCommand(kOpenssl, args, absl::Seconds(30));
  if (!result.ok()) return result.status().ToString();
  if (!result->Succeeded()) {
    return absl::StrCat("openssl ", args[0], " ",
                        DescribeWaitStatus(result->wait_status), ": ",
                        result->err);
  }
  return "";
}

// A P-256 CA, and a leaf certificate signed by it with `extensions` (an
// openssl extfile body), into dir/<name>.pem and dir/<name>.key.
std::string MakeLeaf(const ScopedTempDir& dir, const std::string& name,
                     const std::string& subject, const std::string& serial,
                     const std::string& extensions) {
  const std::string ext = dir.WriteFile(name + ".ext", extensions);
  if (std::string e = Openssl({"req", "-new", "-newkey", "ec", "-pkeyopt",
                               "ec_paramgen_curve:prime256v1", "-nodes",
                               "-keyout", dir.File(name + ".key"), "-out",
                               dir.File(name + ".csr"), "-subj", subject});
      !e.empty()) {
    return e;
  }
  return Openssl({"x509", "-req", "-in", dir.File(name + ".csr"), "-CA",
                  dir.File("ca.pem"), "-CAkey", dir.File("ca.key"),
                  "-set_serial", serial, "-days", "2", "-sha256", "-out",
                  dir.File(name + ".pem"), "-extfile", ext});
}

std::string MakeCertificates(const ScopedTempDir& dir, Certificates* out) {
  if (std::string e = Openssl(
          {"req", "-x509", "-newkey", "ec", "-pkeyopt",
           "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
           dir.File("ca.key"), "-out", dir.File("ca.pem"), "-days", "2",
           "-sha256", "-subj", "/CN=entrograd test CA", "-addext",
           "basicConstraints=critical,CA:TRUE", "-addext",
           "keyUsage=critical,keyCertSign,cRLSign"});
      !e.empty()) {
    return e;
  }
  if (std::string e = MakeLeaf(
          dir, "server", "/CN=localhost", "2",
          "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
          "basicConstraints=critical,CA:FALSE\n"
          "keyUsage=critical,digitalSignature,keyEncipherment\n"
          "extendedKeyUsage=serverAuth\n");
      !e.empty()) {
    return e;
  }
  if (std::string e = MakeLeaf(dir, "client", "/CN=entrograd test worker", "3",
                               "basicConstraints=critical,CA:FALSE\n"
                               "keyUsage=critical,digitalSignature\n"
                               "extendedKeyUsage=clientAuth\n");
      !e.empty()) {
    return e;
  }
  out->ca_file = dir.File("ca.pem");
  out->ca_pem = ReadFileOrEmpty(out->ca_file);
  out->server_cert = dir.File("server.pem");
  out->server_key = dir.File("server.key");
  out->client_cert = dir.File("client.pem");
  out->client_key = dir.File("client.key");
  out->client_cert_pem = ReadFileOrEmpty(out->client_cert);
  out->client_key_pem = ReadFileOrEmpty(out->client_key);
  if (out->ca_pem.empty() || out->client_cert_pem.empty() ||
      out->client_key_pem.empty()) {
    return "openssl wrote empty PEM files";
  }
  return "";
}

class TlsTokensTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(kOpenssl, X_OK) != 0) {
      GTEST_SKIP() << kOpenssl
                   << " is not installed: cannot make test certificates "
                      "(apt-get install openssl)";
    }
    const std::string error = MakeCertificates(dir_, &certs_);
    ASSERT_EQ(error, "") << "making test certificates failed";
    token_file_ = dir_.WriteFile("tokens",
                                 "# two jobs, one token each\n"
                                 "job-a token-a\n"
                                 "job-b token-b\n");
  }

  std::vector<std::string> TlsFlags() const {
    return {absl::StrCat("--tls_cert=", certs_.server_cert),
            absl::StrCat("--tls_key=", certs_.server_key),
            absl::StrCat("--token_file=", token_file_)};
  }

  // A TLS channel to 127.0.0.1:port trusting only the test CA; the server
  // certificate's IP SAN must match 127.0.0.1.
  std::shared_ptr<grpc::Channel> TlsChannel(int port,
                                            bool with_client_cert = false) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = certs_.ca_pem;
    if (with_client_cert) {
      options.pem_cert_chain = certs_.client_cert_pem;
      options.pem_private_key = certs_.client_key_pem;
    }
    return grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                               grpc::SslCredentials(options));
  }

  static JoinSpec Spec(const std::string& job, uint32_t rank,
                       uint32_t world_size) {
    JoinSpec spec;
    spec.job_id = job;
    spec.rank = rank;
    spec.world_size = world_size;
    spec.layers = {{"layer0", 4096}};
    return spec;
  }

  ScopedTempDir dir_;
  Certificates certs_;
  std::string token_file_;
};

TEST_F(TlsTokensTest, TokensAuthenticateAndAuthorizeJobs) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AggregatorProcess> server,
                                 AggregatorProcess::Start(TlsFlags()));
  std::shared_ptr<grpc::Channel> channel = TlsChannel(server->port());
  ASSERT_TRUE(channel->WaitForConnected(
      absl::ToChronoTime(absl::Now() + absl::Seconds(10))))
      << "TLS handshake with the test CA failed\nstderr: "
      << server->process().Stderr();

  {
    TestWorker worker(channel, std::nullopt, absl::Seconds(10));
    EXPECT_THAT(worker.Join(MakeJoin(Spec("job-a", 0, 2))),
                StatusIs(absl::StatusCode::kUnauthenticated, ""))
        << "no token";
  }
  {
    TestWorker worker(channel, "not-a-token", absl::Seconds(10));
    EXPECT_THAT(worker.Join(MakeJoin(Spec("job-a", 0, 2))),
                StatusIs(absl::StatusCode::kUnauthenticated, ""))
        << "unknown token";
  }
  {
    TestWorker worker(channel, "token-a", absl::Seconds(10));
    EXPECT_THAT(worker.Join(MakeJoin(Spec("job-b", 0, 2))),
                StatusIs(absl::StatusCode::kPermissionDenied, "job-b"))
        << "job A's token for job B";
  }
  {
    TestWorker worker(channel, "token-b", absl::Seconds(10));
    EXPECT_THAT(worker.Join(MakeJoin(Spec("job-b", 0, 1))), IsOk())
        << "job B's own token";
    EXPECT_THAT(worker.Finish(), IsOk());
  }

  // Two ranks of job A with its token: a full round, checked bitwise.
  ExpectRoundCompletes(channel, "token-a", "job-a",
                       {RandomSparse(4096, 300, 11), RandomSparse(4096, 300, 12)});
}

TEST_F(TlsTokensTest, InsecureClientCannotTalkToTlsPort) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AggregatorProcess> server,
                                 AggregatorProcess::Start(TlsFlags()));
  auto insecure = LoopbackChannel(server->port());
  TestWorker worker(insecure, "token-a", absl::Seconds(5));
  const absl::Time start = absl::Now();
  EXPECT_THAT(worker.Join(MakeJoin(Spec("job-a", 0, 1))),
              StatusIs(absl::StatusCode::kUnavailable, ""));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << "should fail fast";
  // The TLS port still serves TLS clients afterwards.
  ExpectRoundCompletes(TlsChannel(server->port()), "token-a", "job-a",
                       {RandomSparse(4096, 50, 21)});
}

TEST_F(TlsTokensTest, MutualTlsRequiresAClientCertificateFromTheCa) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back(absl::StrCat("--tls_client_ca=", certs_.ca_file));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AggregatorProcess> server,
                                 AggregatorProcess::Start(flags));
  {
    TestWorker worker(TlsChannel(server->port(), /*with_client_cert=*/false),
                      "token-a", absl::Seconds(5));
    EXPECT_THAT(worker.Join(MakeJoin(Spec("job-a", 0, 1))),
                StatusIs(absl::StatusCode::kUnavailable, ""))
        << "TLS without a client certificate";
  }
  ExpectRoundCompletes(TlsChannel(server->port(), /*with_client_cert=*/true),
                       "token-a", "job-a",
                       {RandomSparse(4096, 200, 31), RandomSparse(4096, 200, 32)});
}

// Starts the binary with `flags`, stops it with SIGTERM and returns all it
// wrote on stderr: waiting for the exit, not for a time, is what makes the
// start-up lines certainly captured.
absl::StatusOr<std::string> StderrOfAStartAndStop(
    const std::vector<std::string>& flags) {
  absl::StatusOr<std::unique_ptr<AggregatorProcess>> server =
      AggregatorProcess::Start(flags);
  if (!server.ok()) return server.status();
  if (absl::Status s = (*server)->Signal(SIGTERM); !s.ok()) return s;
  absl::StatusOr<int> exit = (*server)->Wait(absl::Seconds(30));
  if (!exit.ok()) return exit.status();
  return (*server)->process().Stderr();
}

constexpr char kPlaintextWarning[] = "WARNING: serving gRPC in plaintext";
constexpr char kTokenWarning[] =
    "WARNING: bearer tokens (--token_file) are checked on a plaintext";

TEST_F(TlsTokensTest, PlaintextStartWarnsOnStderr) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::string err, StderrOfAStartAndStop({}));
  EXPECT_THAT(err, HasSubstr(kPlaintextWarning));
  EXPECT_THAT(err, HasSubstr("--tls_cert"));
  EXPECT_THAT(err, Not(HasSubstr(kTokenWarning)));
}

TEST_F(TlsTokensTest, TokensOverPlaintextGetTheStrongerWarning) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::string err,
      StderrOfAStartAndStop({absl::StrCat("--token_file=", token_file_)}));
  EXPECT_THAT(err, HasSubstr(kTokenWarning));
  // One line says it all: the token warning replaces the plain one.
  EXPECT_THAT(err, Not(HasSubstr(kPlaintextWarning)));
}

TEST_F(TlsTokensTest, TlsStartDoesNotWarn) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::string err,
                                 StderrOfAStartAndStop(TlsFlags()));
  EXPECT_THAT(err, Not(HasSubstr("WARNING")));
}

TEST_F(TlsTokensTest, HealthListenServesOnlyHealthInPlaintext) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--health_listen=127.0.0.1:0");
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AggregatorProcess> server,
                                 AggregatorProcess::Start(flags));
  const std::string out = server->process().Stdout();
  const size_t at = out.find("health on port ");
  ASSERT_NE(at, std::string::npos) << "no health port in: " << out;
  const int health_port = std::atoi(out.c_str() + at + 15);
  ASSERT_GT(health_port, 0) << out;
  ASSERT_NE(health_port, server->port());

  // A plaintext client, as the kubelet's gRPC probe is, needs no token.
  std::shared_ptr<grpc::Channel> plaintext = LoopbackChannel(health_port);
  for (const std::string service : {"", "entrograd.v1.Aggregator"}) {
    absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus>
        status = CheckHealth(plaintext, service);
    ASSERT_TRUE(status.ok()) << "service \"" << service << "\": "
                             << status.status();
    EXPECT_EQ(*status, grpc::health::v1::HealthCheckResponse::SERVING)
        << "service \"" << service << "\"";
  }
  // Only health: Exchange is not there, with or without a token.
  TestWorker worker(plaintext, "token-a", absl::Seconds(5));
  EXPECT_THAT(worker.Join(MakeJoin(Spec("job-a", 0, 1))),
              StatusIs(absl::StatusCode::kUnimplemented, ""));
  // The main port still serves TLS only.
  ExpectRoundCompletes(TlsChannel(server->port()), "token-a", "job-a",
                       {RandomSparse(4096, 50, 41)});
}

}  // namespace
}  // namespace entrograd::testing
