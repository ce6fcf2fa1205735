// A minimal data-parallel training job on entrograd, as a user writes it:
// a small LibTorch regression model, DistributedOptimizer over a live
// aggregator, and a final hash of the parameters (equal on every rank when
// the replicas stayed identical).
//
// Usage: example_job AGGREGATOR_ADDRESS JOB_ID RANK WORLD_SIZE STEPS
// Prints "rank R step S loss L" per step and "params_hash H" at the end.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "entrograd/client.h"
#include "entrograd/torch/distributed_optimizer.h"
#include "torch/torch.h"

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s AGGREGATOR JOB_ID RANK WORLD_SIZE STEPS\n", argv[0]);
    return 2;
  }
  const int rank = std::atoi(argv[3]);
  const int world_size = std::atoi(argv[4]);
  const int steps = std::atoi(argv[5]);

  // Every rank builds the same model from the same seed.
  torch::manual_seed(7);
  torch::nn::Sequential model(torch::nn::Linear(64, 256), torch::nn::ReLU(),
                              torch::nn::Linear(256, 1));
  std::vector<std::pair<std::string, torch::Tensor>> parameters;
  for (const auto& item : model->named_parameters()) {
    parameters.emplace_back(item.key(), item.value());
  }
  std::vector<torch::Tensor> tensors;
  for (const auto& [name, tensor] : parameters) tensors.push_back(tensor);

  entrograd::ClientOptions client_options;
  client_options.shards = {argv[1]};
  client_options.job_id = argv[2];
  client_options.rank = static_cast<uint32_t>(rank);
  client_options.world_size = static_cast<uint32_t>(world_size);
  // The process start time in microseconds: a restart replaces its older
  // stream, and the shard refuses values far ahead of its own clock.
  client_options.incarnation = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
  auto client = entrograd::Client::Connect(
      client_options, entrograd::LayerTableOf(parameters),
      entrograd::HashOfParameters(tensors));
  if (!client.ok()) {
    std::fprintf(stderr, "connect: %s\n", client.status().ToString().c_str());
    return 1;
  }

  entrograd::DistributedOptimizerOptions options;
  options.compression.policy = entrograd::KeepPolicy::kEntropy;
  options.compression.rho = 0.05;
  options.compression.momentum_correction = true;
  options.compression.momentum = 0.9;
  options.learning_rate = 0.01;
  auto optimizer = entrograd::DistributedOptimizer::Create(parameters, options,
                                                           client->get());
  if (!optimizer.ok()) {
    std::fprintf(stderr, "optimizer: %s\n", optimizer.status().ToString().c_str());
    return 1;
  }

  // Each rank reads its own shard of a synthetic regression data set.
  torch::manual_seed(100 + rank);
  const torch::Tensor target_weights = torch::linspace(-1, 1, 64).unsqueeze(1);
  for (int step = 0; step < steps; ++step) {
    const torch::Tensor x = torch::randn({32, 64});
    const torch::Tensor y = torch::matmul(x, target_weights);
    const torch::Tensor loss = torch::mse_loss(model->forward(x), y);
    loss.backward();
    if (absl::Status s = (*optimizer)->Step(); !s.ok()) {
      std::fprintf(stderr, "step %d: %s\n", step, s.ToString().c_str());
      return 1;
    }
    std::printf("rank %d step %d loss %.6f\n", rank, step, loss.item<float>());
  }
  std::printf("params_hash %016llx\n",
              static_cast<unsigned long long>(entrograd::HashOfParameters(tensors)));
  (*client)->Close();
  return 0;
}
