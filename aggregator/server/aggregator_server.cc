#include "aggregator/server/aggregator_server.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "aggregator/service/aggregator_service.h"
#include "aggregator/service/reactor_sink.h"
#include "entrograd/common/log.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "prometheus/registry.h"

namespace entrograd::aggregator {

namespace {

constexpr char kServiceName[] = "entrograd.v1.Aggregator";

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path);
  if (!file)
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(
    const AggregatorConfig& config) {
  if (config.tls_cert_file.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      config.tls_client_ca_file.empty()
          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  absl::StatusOr<std::string> cert = ReadFile(config.tls_cert_file);
  absl::StatusOr<std::string> key = ReadFile(config.tls_key_file);
  if (!cert.ok()) return cert.status();
  if (!key.ok()) return key.status();
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!config.tls_client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadFile(config.tls_client_ca_file);
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace

absl::StatusOr<std::unique_ptr<AggregatorServer>> AggregatorServer::Start(
    const AggregatorConfig& config) {
  if (absl::Status status = ValidateConfig(config); !status.ok()) return status;
  std::unique_ptr<AggregatorServer> server(new AggregatorServer());
  server->config_ = config;
  server->metrics_registry_ = std::make_shared<prometheus::Registry>();
  server->metrics_ =
      std::make_unique<AggregatorMetrics>(server->metrics_registry_);
  if (!config.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<MetricsServer>> metrics_server =
        MetricsServer::Start(config.metrics_listen, server->metrics_registry_);
    if (!metrics_server.ok()) return metrics_server.status();
    server->metrics_server_ = std::move(*metrics_server);
  }
  if (!config.token_file.empty()) {
    absl::StatusOr<TokenStore> tokens = TokenStore::LoadFile(config.token_file);
    if (!tokens.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--token_file: ", tokens.status().message()));
    }
    server->tokens_ = std::move(*tokens);
  }
  RegistryOptions registry_options = config.registry;
  registry_options.max_message_bytes = config.max_message_bytes;
  server->registry_ =
      std::make_unique<JobRegistry>(registry_options, server->metrics_.get());
  ServiceOptions service_options;
  service_options.max_stream_queue_bytes =
      config.max_stream_queue_bytes > 0
          ? config.max_stream_queue_bytes
          : ReactorSink::DefaultMaxQueuedBytes(config.max_message_bytes);
  service_options.merge_threads = MergeThreads(config);
  server->service_ = std::make_unique<AggregatorService>(
      server->registry_.get(),
      server->tokens_.has_value() ? &*server->tokens_ : nullptr,
      server->metrics_.get(), service_options);

  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      Credentials(config);
  if (!credentials.ok()) return credentials.status();
  grpc::EnableDefaultHealthCheckService(true);
  if (!config.health_listen.empty()) {
    // Built before reflection is enabled (a process-wide plugin that every
    // later builder picks up), so this port serves grpc.health.v1 alone.
    grpc::ServerBuilder health_builder;
    health_builder.AddListeningPort(config.health_listen,
                                    grpc::InsecureServerCredentials(),
                                    &server->health_port_);
    server->health_server_ = health_builder.BuildAndStart();
    if (server->health_server_ == nullptr || server->health_port_ == 0) {
      return absl::UnavailableError(
          absl::StrCat("--health_listen=", config.health_listen,
                       ": cannot bind the health port"));
    }
  }
  if (config.reflection)
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config.listen, *credentials, &server->port_);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(static_cast<int>(config.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(config.max_message_bytes));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS,
                             absl::ToInt64Milliseconds(config.keepalive_time));
  builder.AddChannelArgument(
      GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
      absl::ToInt64Milliseconds(config.keepalive_timeout));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // Workers ping at their own keepalive; allow it without a data frame.
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("--listen=", config.listen,
                                               ": cannot bind the gRPC port"));
  }
  server->SetServing(true);
  server->reaper_ = std::thread([raw = server.get()] { raw->ReapLoop(); });
  return server;
}

AggregatorServer::~AggregatorServer() {
  // Start may give up before the gRPC server exists (a bad token file, a
  // port in use): then there is nothing to drain.
  if (server_ == nullptr) {
    if (health_server_ != nullptr) health_server_->Shutdown();
    return;
  }
  Drain(absl::ZeroDuration());
  Wait();
}

int AggregatorServer::metrics_port() const {
  return metrics_server_ == nullptr ? 0 : metrics_server_->port();
}

void AggregatorServer::SetServing(bool serving) {
  for (grpc::Server* server : {server_.get(), health_server_.get()}) {
    if (server == nullptr) continue;
    grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
    health->SetServingStatus(serving);
    health->SetServingStatus(kServiceName, serving);
  }
}

void AggregatorServer::ReapLoop() {
  // Check often enough that an abort lands within a tenth of the timeout
  // (at most 100 ms) after it is due.
  const absl::Duration period =
      std::min(absl::Milliseconds(100), config_.registry.round_timeout / 10);
  while (!stop_reaper_.WaitForNotificationWithTimeout(period)) {
    registry_->AbortExpiredRounds(absl::Now());
  }
}

void AggregatorServer::Drain(std::optional<absl::Duration> timeout) {
  if (server_ == nullptr) return;
  {
    absl::MutexLock lock(&drain_mutex_);
    if (drained_) return;
    drained_ = true;
  }
  const absl::Duration budget = timeout.value_or(config_.drain_timeout);
  const absl::Time deadline = absl::Now() + budget;
  SetServing(false);
  registry_->StopAcceptingJoins();
  ENTROGRAD_LOG(kInfo, "draining: health NOT_SERVING, ",
                registry_->RoundsInFlight(), " round(s) in flight get up to ",
                absl::FormatDuration(budget));
  while (registry_->RoundsInFlight() > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  registry_->AbortAllRounds("the aggregator is shutting down (drain timeout)");
  stop_reaper_.Notify();
  if (reaper_.joinable()) reaper_.join();
  // Shutdown waits for every stream to finish, and a stream whose update
  // waits in the merge pool finishes only when that update is done: give
  // the queued ones up (UNAVAILABLE: the workers reconnect and resend).
  service_->StopWork();
  // Streams get a moment to flush what is queued, then are cancelled.
  server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  if (health_server_ != nullptr) health_server_->Shutdown();
}

void AggregatorServer::Wait() {
  if (server_ != nullptr) server_->Wait();
  if (health_server_ != nullptr) health_server_->Wait();
}

void AggregatorServer::Abandon() {
  if (server_ == nullptr) return;
  {
    absl::MutexLock lock(&drain_mutex_);
    if (drained_) return;
    drained_ = true;
  }
  stop_reaper_.Notify();
  if (reaper_.joinable()) reaper_.join();
  service_->StopWork();  // as in Drain
  server_->Shutdown(absl::ToChronoTime(absl::Now()));
  if (health_server_ != nullptr) {
    health_server_->Shutdown(absl::ToChronoTime(absl::Now()));
  }
}

}  // namespace entrograd::aggregator
