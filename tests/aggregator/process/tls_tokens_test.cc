// TLS and bearer tokens end to end: a CA, a server certificate for
// 127.0.0.1/localhost and a client certificate are made with /usr/bin/openssl
// at test time; the binary serves TLS with a token file of two jobs.
#include <unistd.h>

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

}  // namespace
}  // namespace entrograd::testing
