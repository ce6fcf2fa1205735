// ValidateWorkerConfig's TLS rules: the files entrograd-worker's --tls_ca,
// --tls_cert and --tls_key name must be readable and come in the
// combinations ClientOptions can use; errors name the flag.
#include "workers/fashion_mnist/worker_config.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::workers {
namespace {

using ::entrograd::testing::IsOk;
using ::entrograd::testing::StatusIs;

class WorkerConfigTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Validation reads the files, never parses them: any text will do.
    ca_ = WriteFile("ca.pem");
    cert_ = WriteFile("client.pem");
    key_ = WriteFile("client.key");
    config_.shards = {"127.0.0.1:50051"};
  }
  void TearDown() override {
    for (const std::string& path : {ca_, cert_, key_})
      std::remove(path.c_str());
  }

  static std::string WriteFile(const std::string& name) {
    const std::string path = ::testing::TempDir() + "/worker_config_test_" +
                             std::to_string(::getpid()) + "_" + name;
    std::ofstream(path) << "-----BEGIN TEST-----\n";
    return path;
  }

  WorkerConfig config_;
  std::string ca_, cert_, key_;
};

TEST_F(WorkerConfigTlsTest, PlaintextByDefault) {
  EXPECT_THAT(ValidateWorkerConfig(config_), IsOk());
}

TEST_F(WorkerConfigTlsTest, CaAloneIsServerAuthenticatedTls) {
  config_.tls_ca_file = ca_;
  EXPECT_THAT(ValidateWorkerConfig(config_), IsOk());
}

TEST_F(WorkerConfigTlsTest, CaCertAndKeyIsMutualTls) {
  config_.tls_ca_file = ca_;
  config_.tls_cert_file = cert_;
  config_.tls_key_file = key_;
  EXPECT_THAT(ValidateWorkerConfig(config_), IsOk());
}

TEST_F(WorkerConfigTlsTest, MissingCaFileIsNamed) {
  config_.tls_ca_file = ca_ + ".missing";
  EXPECT_THAT(ValidateWorkerConfig(config_),
              StatusIs(absl::StatusCode::kInvalidArgument, "--tls_ca"));
}

TEST_F(WorkerConfigTlsTest, MissingCertAndKeyFilesAreNamed) {
  config_.tls_ca_file = ca_;
  config_.tls_cert_file = cert_ + ".missing";
  config_.tls_key_file = key_;
  EXPECT_THAT(ValidateWorkerConfig(config_),
              StatusIs(absl::StatusCode::kInvalidArgument, "--tls_cert"));
  config_.tls_cert_file = cert_;
  config_.tls_key_file = key_ + ".missing";
  EXPECT_THAT(ValidateWorkerConfig(config_),
              StatusIs(absl::StatusCode::kInvalidArgument, "--tls_key"));
}

TEST_F(WorkerConfigTlsTest, CertWithoutKeyAndKeyWithoutCertAreRefused) {
  config_.tls_ca_file = ca_;
  config_.tls_cert_file = cert_;
  EXPECT_THAT(ValidateWorkerConfig(config_),
              StatusIs(absl::StatusCode::kInvalidArgument, "--tls_key"));
  config_.tls_cert_file.clear();
  config_.tls_key_file = key_;
  EXPECT_THAT(ValidateWorkerConfig(config_),
              StatusIs(absl::StatusCode::kInvalidArgument, "--tls_cert"));
}

TEST_F(WorkerConfigTlsTest, ClientCertificateWithoutCaIsRefused) {
  // Without root certificates the client would speak plaintext and the
  // certificate would be silently unused.
  config_.tls_cert_file = cert_;
  config_.tls_key_file = key_;
  EXPECT_THAT(ValidateWorkerConfig(config_),
              StatusIs(absl::StatusCode::kInvalidArgument, "--tls_ca"));
}

TEST(WorkerConfigTest, PartitionBytesIsZeroOrAtLeastOneFloat) {
  WorkerConfig config;
  config.shards = {"127.0.0.1:50051"};
  for (int64_t ok : {int64_t{0}, int64_t{4}, int64_t{4} << 20}) {
    config.partition_bytes = ok;
    EXPECT_THAT(ValidateWorkerConfig(config), IsOk()) << ok;
  }
  for (int64_t bad : {int64_t{-4}, int64_t{3}}) {
    config.partition_bytes = bad;
    EXPECT_THAT(ValidateWorkerConfig(config),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "--partition_bytes"))
        << bad;
  }
}

}  // namespace
}  // namespace entrograd::workers
