// MetricsServer: prometheus::Exposer (civetweb) bound to one validated
// "host:port"; exceptions from civetweb become absl::Status here.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "entrograd/common/metrics_server.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"

namespace entrograd {
namespace {

bool IsIpv4Literal(const std::string& host) {
  in_addr address;
  return inet_pton(AF_INET, host.c_str(), &address) == 1;
}

bool IsIpv6Literal(const std::string& host) {
  in6_addr address;
  return inet_pton(AF_INET6, host.c_str(), &address) == 1;
}

// Checks "host:port" (IPv4 literal or bracketed IPv6 literal, port 0..65535)
// so that nothing civetweb would read differently ("8080s", lists) gets
// through. Returns INVALID_ARGUMENT naming the problem.
absl::Status ValidateAddress(const std::string& address) {
  const std::size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics address \"", address, "\" is not of the form host:port"));
  }
  const std::string host = address.substr(0, colon);
  const absl::string_view port_text =
      absl::string_view(address).substr(colon + 1);
  bool port_digits = !port_text.empty() && port_text.size() <= 5;
  for (char c : port_text) port_digits = port_digits && absl::ascii_isdigit(c);
  int port = -1;
  if (!port_digits || !absl::SimpleAtoi(port_text, &port) || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address \"", address,
                     "\": port must be a number in 0..65535"));
  }
  const bool bracketed =
      host.size() >= 2 && host.front() == '[' && host.back() == ']';
  const bool host_ok = bracketed
                           ? IsIpv6Literal(host.substr(1, host.size() - 2))
                           : IsIpv4Literal(host);
  if (!host_ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics address \"", address,
        "\": host must be an IPv4 address or a bracketed IPv6 address"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& address,
    std::shared_ptr<prometheus::Registry> registry) {
  if (registry == nullptr) {
    return absl::InvalidArgumentError("metrics registry is null");
  }
  if (absl::Status valid = ValidateAddress(address); !valid.ok()) {
    return valid;
  }
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  server->registry_ = std::move(registry);
  try {
    server->exposer_ = std::make_unique<prometheus::Exposer>(address);
  } catch (const std::exception& error) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", address, ": ", error.what()));
  }
  const std::vector<int> ports = server->exposer_->GetListeningPorts();
  if (ports.empty() || ports.front() <= 0) {
    return absl::UnavailableError(
        absl::StrCat("metrics server on ", address, " reports no bound port"));
  }
  server->port_ = ports.front();
  server->exposer_->RegisterCollectable(server->registry_);
  return server;
}

// Stops the civetweb threads before the registry can go.
MetricsServer::~MetricsServer() { exposer_.reset(); }

}  // namespace entrograd
