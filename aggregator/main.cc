// entrograd-aggregator: flags -> validated config -> server; SIGTERM/SIGINT
// drain it and exit 0.
#include <csignal>
#include <iostream>
#include <string>

#include "aggregator/config/aggregator_flags.h"
#include "aggregator/server/aggregator_server.h"
#include "entrograd/common/log.h"

int main(int argc, char** argv) {
  absl::StatusOr<entrograd::aggregator::AggregatorConfig> config =
      entrograd::aggregator::ConfigFromFlags(argc, argv);
  if (!config.ok()) {
    std::cerr << "entrograd-aggregator: " << config.status().message() << "\n";
    return 2;
  }
  entrograd::SetLogLevel(*entrograd::ParseLogLevel(config->log_level));
  // Straight to stderr, not through the logger: --log_level=error must not
  // hide that the port is unencrypted.
  if (const std::string warning =
          entrograd::aggregator::PlaintextWarning(*config);
      !warning.empty()) {
    std::cerr << "entrograd-aggregator: " << warning << std::endl;
  }
  // Block the stop signals before any thread starts, so only the waiter
  // below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto server = entrograd::aggregator::AggregatorServer::Start(*config);
  if (!server.ok()) {
    std::cerr << "entrograd-aggregator: " << server.status().message() << "\n";
    return 1;
  }
  std::cout << "entrograd-aggregator: serving on port " << (*server)->port()
            << ", metrics on port " << (*server)->metrics_port();
  if ((*server)->health_port() != 0) {
    std::cout << ", health on port " << (*server)->health_port();
  }
  std::cout << std::endl;
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::cout << "entrograd-aggregator: signal " << signal_number << ", draining"
            << std::endl;
  (*server)->Drain();
  (*server)->Wait();
  std::cout << "entrograd-aggregator: stopped" << std::endl;
  return 0;
}
