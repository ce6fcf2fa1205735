// DistributedOptimizer against real in-process aggregator shards, 2 ranks
// (ALGORITHM.md 7): under the dense policy it is exactly synchronous momentum
// SGD; a compressed layer beside a layer sent whole keeps the replicas
// bitwise identical while the small layer takes momentum SGD; and a run
// resumed from SaveState/LoadState ends bitwise where an uninterrupted run
// ends, which needs the momentum buffers of the layers sent whole.

#include "entrograd/torch/distributed_optimizer.h"

#include <torch/torch.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"
#include "client_lib/transport/client_test_util.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

constexpr uint32_t kWorld = 2;
constexpr double kMomentum = 0.9;
constexpr double kLearningRate = 0.1;

using NamedParameters = std::vector<std::pair<std::string, torch::Tensor>>;

struct LayerShape {
  std::string name;
  std::vector<int64_t> sizes;
};

// A compressed weight (5000 elements) and a bias sent whole (20 < 1024).
const std::vector<LayerShape>& MixedModel() {
  static const auto* shapes = new std::vector<LayerShape>{
      {"fc.weight", {20, 250}}, {"fc.bias", {20}}};
  return *shapes;
}

// Normal values without exact zeros (the codec drops zeros, which would
// make a dense payload sparse; the merge is the same, but keep it simple).
torch::Tensor Values(const std::vector<int64_t>& sizes, uint32_t seed,
                     float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  torch::Tensor tensor = torch::empty(sizes, torch::kFloat32);
  float* data = tensor.data_ptr<float>();
  for (int64_t i = 0; i < tensor.numel(); ++i) {
    float value = 0.0f;
    while (value == 0.0f) value = normal(rng);
    data[i] = value;
  }
  return tensor;
}

// The same initial parameters on every rank and in the reference.
NamedParameters InitialParameters(const std::vector<LayerShape>& shapes) {
  NamedParameters parameters;
  for (size_t l = 0; l < shapes.size(); ++l) {
    parameters.emplace_back(
        shapes[l].name,
        Values(shapes[l].sizes, 1000 + l, 0.1f).set_requires_grad(true));
  }
  return parameters;
}

// The gradient rank `rank` computes for layer `layer` at `step`.
torch::Tensor Gradient(const LayerShape& shape, uint32_t rank, int64_t step,
                       size_t layer) {
  return Values(shape.sizes,
                static_cast<uint32_t>(7919 * step + 101 * rank + layer), 0.5f);
}

NamedParameters Clone(const NamedParameters& parameters) {
  NamedParameters copy;
  for (const auto& [name, tensor] : parameters) {
    copy.emplace_back(name, tensor.detach().clone().set_requires_grad(true));
  }
  return copy;
}

// One rank: its parameters, client and optimizer.
struct Replica {
  NamedParameters parameters;
  std::unique_ptr<Client> client;
  std::unique_ptr<DistributedOptimizer> optimizer;
};

DistributedOptimizerOptions OptimizerOptions(KeepPolicy policy) {
  DistributedOptimizerOptions options;
  options.compression.policy = policy;
  options.compression.rho = 0.05;
  options.compression.momentum_correction = true;
  options.compression.momentum = kMomentum;
  options.learning_rate = kLearningRate;
  return options;
}

// Connects kWorld replicas starting from `parameters` (each gets a copy) to
// `shards`; `applied_step` and `first_step` as on resume.
std::vector<Replica> ConnectReplicas(const Shards& shards,
                                     const std::string& job,
                                     const NamedParameters& parameters,
                                     const DistributedOptimizerOptions& options,
                                     int64_t first_step = 0) {
  std::vector<Replica> replicas(kWorld);
  std::vector<absl::Status> connected(kWorld);
  std::vector<std::thread> threads;
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    replicas[rank].parameters = Clone(parameters);
    threads.emplace_back([&, rank] {
      ClientOptions client_options =
          TestOptions(shards.addresses(), job, rank, kWorld);
      client_options.applied_step = first_step - 1;
      auto client = Client::Connect(client_options,
                                    LayerTableOf(replicas[rank].parameters),
                                    /*initial_params_hash=*/11);
      connected[rank] = client.status();
      if (client.ok()) replicas[rank].client = std::move(*client);
    });
  }
  for (auto& thread : threads) thread.join();
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    EXPECT_TRUE(connected[rank].ok()) << connected[rank];
    if (!connected[rank].ok()) return {};
    auto optimizer = DistributedOptimizer::Create(
        replicas[rank].parameters, options, replicas[rank].client.get(),
        first_step);
    EXPECT_TRUE(optimizer.ok()) << optimizer.status();
    if (!optimizer.ok()) return {};
    replicas[rank].optimizer = std::move(*optimizer);
  }
  return replicas;
}

// Steps [first, last) on every replica, each rank on its own thread (Step
// waits for the other ranks' contributions): backward of sum(p * g) gives
// each parameter exactly the gradient g.
// `gradient_scale`, when given, multiplies every gradient of a step;
// `learning_rate_at`, when given, is set before every step.
void RunSteps(std::vector<Replica>& replicas,
              const std::vector<LayerShape>& shapes, int64_t first,
              int64_t last,
              const std::function<double(int64_t)>& gradient_scale = nullptr,
              const std::function<double(int64_t)>& learning_rate_at = nullptr) {
  std::vector<absl::Status> results(replicas.size());
  std::vector<std::thread> threads;
  for (uint32_t rank = 0; rank < replicas.size(); ++rank) {
    threads.emplace_back([&, rank] {
      Replica& replica = replicas[rank];
      for (int64_t step = first; step < last; ++step) {
        if (learning_rate_at) {
          const absl::Status status =
              replica.optimizer->set_learning_rate(learning_rate_at(step));
          if (!status.ok()) {
            results[rank] = status;
            return;
          }
        }
        torch::Tensor loss = torch::zeros({}, torch::kFloat32);
        for (size_t l = 0; l < shapes.size(); ++l) {
          torch::Tensor gradient = Gradient(shapes[l], rank, step, l);
          if (gradient_scale) gradient = gradient * gradient_scale(step);
          loss = loss + (replica.parameters[l].second * gradient).sum();
        }
        loss.backward();
        absl::Status status = replica.optimizer->Step();
        if (!status.ok()) {
          results[rank] = status;
          return;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (uint32_t rank = 0; rank < replicas.size(); ++rank) {
    EXPECT_TRUE(results[rank].ok()) << "rank " << rank << ": " << results[rank];
  }
}

// Synchronous momentum SGD on layer `layer` for steps [0, steps): the merged
// gradient as the aggregator forms it (sum over ranks in ascending rank
// order, divided by the world size, in float32), then B <- mu B + merged;
// p <- p - lr B as separate torch operations.
torch::Tensor ReferenceMomentumSgd(
    const NamedParameters& initial, const std::vector<LayerShape>& shapes,
    size_t layer, int64_t steps,
    const std::function<double(int64_t)>& learning_rate_at = [](int64_t) {
      return kLearningRate;
    }) {
  torch::NoGradGuard no_grad;
  torch::Tensor parameter = initial[layer].second.detach().clone();
  torch::Tensor buffer = torch::zeros_like(parameter);
  for (int64_t step = 0; step < steps; ++step) {
    torch::Tensor sum = Gradient(shapes[layer], 0, step, layer);
    for (uint32_t rank = 1; rank < kWorld; ++rank) {
      sum = sum + Gradient(shapes[layer], rank, step, layer);
    }
    const torch::Tensor merged = sum / static_cast<double>(kWorld);
    buffer = buffer * kMomentum + merged;
    parameter = parameter - buffer * learning_rate_at(step);
  }
  return parameter;
}

// Plain SGD on the averaged gradient: what the layer would get without its
// momentum buffer, to show that the comparison above can tell them apart.
torch::Tensor ReferencePlainSgd(const NamedParameters& initial,
                                const std::vector<LayerShape>& shapes,
                                size_t layer, int64_t steps) {
  torch::NoGradGuard no_grad;
  torch::Tensor parameter = initial[layer].second.detach().clone();
  for (int64_t step = 0; step < steps; ++step) {
    torch::Tensor sum = Gradient(shapes[layer], 0, step, layer);
    for (uint32_t rank = 1; rank < kWorld; ++rank) {
      sum = sum + Gradient(shapes[layer], rank, step, layer);
    }
    parameter = parameter - (sum / static_cast<double>(kWorld)) * kLearningRate;
  }
  return parameter;
}

void ExpectReplicasIdentical(const std::vector<Replica>& replicas) {
  for (uint32_t rank = 1; rank < replicas.size(); ++rank) {
    for (size_t l = 0; l < replicas[0].parameters.size(); ++l) {
      EXPECT_TRUE(torch::equal(replicas[rank].parameters[l].second,
                               replicas[0].parameters[l].second))
          << "rank " << rank << " diverged in "
          << replicas[0].parameters[l].first;
    }
  }
}

std::string TempPath(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) /
      absl::StrCat("distributed_optimizer_test_", ::getpid());
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

class DistributedOptimizerTest : public ::testing::Test {
 protected:
  void SetUp() override { torch::set_num_threads(1); }
};

TEST_F(DistributedOptimizerTest, DensePolicyIsSynchronousMomentumSgdBitwise) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  // Both layers above dense_below: sent whole because of the policy.
  const std::vector<LayerShape> shapes = {{"a.weight", {40, 30}},
                                          {"b.weight", {1100}}};
  const NamedParameters initial = InitialParameters(shapes);
  std::vector<Replica> replicas = ConnectReplicas(
      shards, "dense-momentum", initial, OptimizerOptions(KeepPolicy::kDense));
  ASSERT_EQ(replicas.size(), kWorld);
  constexpr int64_t kSteps = 5;
  RunSteps(replicas, shapes, 0, kSteps);
  for (size_t l = 0; l < shapes.size(); ++l) {
    SCOPED_TRACE(shapes[l].name);
    const torch::Tensor expected =
        ReferenceMomentumSgd(initial, shapes, l, kSteps);
    ASSERT_FALSE(torch::equal(expected,
                              ReferencePlainSgd(initial, shapes, l, kSteps)));
    for (uint32_t rank = 0; rank < kWorld; ++rank) {
      EXPECT_TRUE(torch::equal(replicas[rank].parameters[l].second, expected))
          << "rank " << rank << ": max |difference| "
          << (replicas[rank].parameters[l].second - expected)
                 .abs()
                 .max()
                 .item<float>();
    }
  }
}

// A learning-rate schedule set between steps (set_learning_rate) is
// exactly momentum SGD under that schedule: the buffer holds gradients, so
// the new rate scales only the updates from then on.
TEST_F(DistributedOptimizerTest, LearningRateScheduleIsMomentumSgdWithItBitwise) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerShape> shapes = {{"a.weight", {40, 30}}};
  const NamedParameters initial = InitialParameters(shapes);
  std::vector<Replica> replicas = ConnectReplicas(
      shards, "dense-schedule", initial, OptimizerOptions(KeepPolicy::kDense));
  ASSERT_EQ(replicas.size(), kWorld);
  constexpr int64_t kSteps = 5;
  const auto schedule = [](int64_t step) {
    return kLearningRate / static_cast<double>(1 + step);
  };
  for (int64_t step = 0; step < kSteps; ++step) {
    for (Replica& replica : replicas) {
      ENTROGRAD_ASSERT_OK(replica.optimizer->set_learning_rate(schedule(step)));
    }
    RunSteps(replicas, shapes, step, step + 1);
  }
  const torch::Tensor expected =
      ReferenceMomentumSgd(initial, shapes, 0, kSteps, schedule);
  ASSERT_FALSE(torch::equal(expected, ReferenceMomentumSgd(initial, shapes, 0, kSteps)));
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    EXPECT_TRUE(torch::equal(replicas[rank].parameters[0].second, expected))
        << "rank " << rank;
  }
}

TEST_F(DistributedOptimizerTest, CompressedAndWholeLayersKeepReplicasIdentical) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerShape>& shapes = MixedModel();
  const NamedParameters initial = InitialParameters(shapes);
  std::vector<Replica> replicas = ConnectReplicas(
      shards, "mixed", initial, OptimizerOptions(KeepPolicy::kEntropy));
  ASSERT_EQ(replicas.size(), kWorld);
  constexpr int64_t kSteps = 6;
  for (int64_t step = 0; step < kSteps; ++step) {
    RunSteps(replicas, shapes, step, step + 1);
    SCOPED_TRACE(absl::StrCat("after step ", step));
    ExpectReplicasIdentical(replicas);
  }
  // The compressed layer moved, through its sparse merged updates only.
  const torch::Tensor& weight = replicas[0].parameters[0].second;
  const torch::Tensor moved = weight != initial[0].second;
  EXPECT_GT(moved.sum().item<int64_t>(), 0);
  EXPECT_LT(moved.sum().item<int64_t>(), weight.numel());
  EXPECT_TRUE(torch::isfinite(weight).all().item<bool>());
  // The bias, sent whole, took synchronous momentum SGD.
  EXPECT_TRUE(torch::equal(replicas[0].parameters[1].second,
                           ReferenceMomentumSgd(initial, shapes, 1, kSteps)));
  // Per-layer totals: each rank sent its own share of the weight, the union
  // came back to both (at least what either sent, at most both together),
  // and the bias went whole both ways.
  const std::vector<LayerTotals> first = replicas[0].optimizer->layer_totals();
  const std::vector<LayerTotals> second = replicas[1].optimizer->layer_totals();
  ASSERT_EQ(first.size(), 2u);
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(first[0].name, "fc.weight");
  EXPECT_EQ(first[0].numel, 5000);
  EXPECT_EQ(first[0].steps, kSteps);
  EXPECT_GT(first[0].sent_entries, 0);
  EXPECT_LT(first[0].sent_entries, kSteps * 5000);
  EXPECT_EQ(first[0].merged_entries, second[0].merged_entries);
  EXPECT_GE(first[0].merged_entries,
            std::max(first[0].sent_entries, second[0].sent_entries));
  EXPECT_LE(first[0].merged_entries,
            first[0].sent_entries + second[0].sent_entries);
  EXPECT_EQ(first[1].sent_entries, kSteps * 20);
  EXPECT_EQ(first[1].merged_entries, kSteps * 20);
  EXPECT_DOUBLE_EQ(first[1].sent_share(), 1.0);
  EXPECT_DOUBLE_EQ(first[1].merged_share(), 1.0);
}

// Global top-k through a real shard: the merged update carries only the K
// = largest k entries of largest magnitude (not the union of both ranks'),
// and every entry a rank sent that was not applied is back in its
// residual, so after the first step G equals the gradient bit for bit
// wherever the parameters did not move.
// Update-space accumulation (accumulate_in_update_space): under a schedule
// lr_t, a compressed layer gets the updates that the method as specified at
// a constant rate c gets from the gradients (lr_t / c) u_t, i.e. every
// gradient is applied at its own step's rate, up to float32 rounding.
// Without the option the schedule gives something else: the entries held
// back come out at the later, lower rate. Under a constant rate the option
// changes no byte.
TEST_F(DistributedOptimizerTest, UpdateSpaceAccumulationAppliesEachGradientAtItsOwnRate) {
  const std::vector<LayerShape> shapes = {{"fc.weight", {20, 250}}};
  const NamedParameters initial = InitialParameters(shapes);
  constexpr int64_t kSteps = 8;
  const auto schedule = [](int64_t step) {
    return kLearningRate * (1.0 - 0.1 * static_cast<double>(step));
  };
  const auto run = [&](bool update_space, bool scheduled) {
    Shards shards(1);
    EXPECT_TRUE(shards.ok());
    DistributedOptimizerOptions options = OptimizerOptions(KeepPolicy::kTopK);
    options.accumulate_in_update_space = update_space;
    std::vector<Replica> replicas = ConnectReplicas(
        shards, absl::StrCat("update-space-", update_space, scheduled),
        initial, options);
    EXPECT_EQ(replicas.size(), kWorld);
    if (replicas.size() != kWorld) return torch::Tensor();
    for (int64_t step = 0; step < kSteps; ++step) {
      if (scheduled) {
        for (Replica& replica : replicas) {
          EXPECT_TRUE(replica.optimizer->set_learning_rate(schedule(step)).ok());
        }
        RunSteps(replicas, shapes, step, step + 1);
      } else {
        RunSteps(replicas, shapes, step, step + 1, [&](int64_t s) {
          return schedule(s) / kLearningRate;
        });
      }
    }
    ExpectReplicasIdentical(replicas);
    return replicas[0].parameters[0].second.detach().clone();
  };
  const torch::Tensor reference = run(/*update_space=*/false, /*scheduled=*/false);
  const torch::Tensor update_space = run(true, true);
  const torch::Tensor gradient_space = run(false, true);
  ASSERT_TRUE(reference.defined() && update_space.defined() &&
              gradient_space.defined());
  const float moved = (reference - initial[0].second).abs().max().item<float>();
  const float error = (update_space - reference).abs().max().item<float>();
  const float without = (gradient_space - reference).abs().max().item<float>();
  EXPECT_GT(moved, 0.1f);
  EXPECT_LT(error, 1e-5f) << "update space against the reference";
  EXPECT_GT(without, 1e-3f) << "gradient space against the reference";
  // At a constant rate (the prescaled gradients) the option is a no-op.
  EXPECT_TRUE(torch::equal(run(true, false), reference));
}

TEST_F(DistributedOptimizerTest, GlobalTopKKeepsWhatWasNotAppliedBitwise) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerShape>& shapes = MixedModel();
  const NamedParameters initial = InitialParameters(shapes);
  DistributedOptimizerOptions options = OptimizerOptions(KeepPolicy::kTopK);
  options.merged_keep_factor = 1.0;
  std::vector<Replica> replicas =
      ConnectReplicas(shards, "global-top-k", initial, options);
  ASSERT_EQ(replicas.size(), kWorld);
  RunSteps(replicas, shapes, 0, 1);
  ExpectReplicasIdentical(replicas);
  const torch::Tensor applied =
      (replicas[0].parameters[0].second != initial[0].second).reshape({-1});
  // k = 0.05 * 5000 per rank; the union of two ranks' would be up to 500.
  EXPECT_EQ(applied.sum().item<int64_t>(), 250);
  // The totals count what was applied, not the union: 250 of 5000.
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    const std::vector<LayerTotals> totals = replicas[rank].optimizer->layer_totals();
    ASSERT_EQ(totals.size(), 2u);
    EXPECT_EQ(totals[0].steps, 1);
    EXPECT_EQ(totals[0].sent_entries, 250);
    EXPECT_EQ(totals[0].merged_entries, 250);
    EXPECT_DOUBLE_EQ(totals[0].sent_share(), 0.05);
    EXPECT_DOUBLE_EQ(totals[0].merged_share(), 0.05);
  }
  const bool* is_applied = applied.data_ptr<bool>();
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    SCOPED_TRACE(absl::StrCat("rank ", rank));
    const std::string path = TempPath(absl::StrCat("global_top_k_", rank));
    ENTROGRAD_ASSERT_OK(replicas[rank].optimizer->SaveState(path));
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    torch::Tensor residual;
    archive.read("residual_0", residual);
    // From zero state A = V = u, so G is u where nothing was applied.
    const torch::Tensor gradient =
        Gradient(shapes[0], rank, 0, 0).reshape({-1}).contiguous();
    const float* g = residual.data_ptr<float>();
    const float* u = gradient.data_ptr<float>();
    int64_t kept_back = 0;
    int64_t applied_own = 0;
    for (int64_t i = 0; i < gradient.numel(); ++i) {
      if (!is_applied[i]) {
        ASSERT_EQ(absl::bit_cast<uint32_t>(g[i]), absl::bit_cast<uint32_t>(u[i]))
            << "element " << i << " was not applied and is not in G";
      } else if (g[i] == 0.0f) {
        ++applied_own;
      } else {
        ASSERT_EQ(g[i], u[i]) << "element " << i;
      }
    }
    // Of the rank's 250, those applied are out of G; the rest went back.
    kept_back = 250 - applied_own;
    EXPECT_GT(applied_own, 0);
    EXPECT_GT(kept_back, 0);
  }
  RunSteps(replicas, shapes, 1, 5);
  ExpectReplicasIdentical(replicas);
  EXPECT_TRUE(torch::isfinite(replicas[0].parameters[0].second).all().item<bool>());
}

// Runs `steps` steps uninterrupted, and again with every rank checkpointed
// after `checkpoint_step` and resumed in fresh optimizers against a fresh
// aggregator; returns rank 0's parameters of the uninterrupted run, after
// expecting the resumed run to end bitwise where it ends on every rank.
NamedParameters ExpectResumeEndsBitwise(
    const std::vector<LayerShape>& shapes, const NamedParameters& initial,
    const DistributedOptimizerOptions& options, int64_t steps,
    int64_t checkpoint_step, const std::string& job,
    const std::function<double(int64_t)>& learning_rate_at = nullptr) {
  NamedParameters uninterrupted;
  {
    Shards shards(1);
    EXPECT_TRUE(shards.ok());
    std::vector<Replica> replicas =
        ConnectReplicas(shards, job + "-uninterrupted", initial, options);
    if (replicas.size() != kWorld) return {};
    RunSteps(replicas, shapes, 0, steps, nullptr, learning_rate_at);
    uninterrupted = Clone(replicas[0].parameters);
  }

  // The first part, then every rank's checkpoint: parameters and optimizer
  // state (residual, velocity, the bias's momentum buffer, nonzero now, and
  // any held share).
  std::vector<NamedParameters> saved_parameters;
  std::vector<std::string> state_paths;
  {
    Shards shards(1);
    EXPECT_TRUE(shards.ok());
    std::vector<Replica> replicas =
        ConnectReplicas(shards, job + "-first-part", initial, options);
    if (replicas.size() != kWorld) return {};
    RunSteps(replicas, shapes, 0, checkpoint_step, nullptr, learning_rate_at);
    for (uint32_t rank = 0; rank < kWorld; ++rank) {
      state_paths.push_back(
          TempPath(absl::StrCat(job, "_resume_rank", rank, ".pt")));
      const absl::Status saved =
          replicas[rank].optimizer->SaveState(state_paths[rank]);
      EXPECT_TRUE(saved.ok()) << saved;
      saved_parameters.push_back(Clone(replicas[rank].parameters));
    }
  }

  // New processes, as it were: fresh optimizers from the checkpoint, against
  // a fresh aggregator.
  Shards shards(1);
  EXPECT_TRUE(shards.ok());
  std::vector<Replica> replicas = ConnectReplicas(
      shards, job + "-second-part", initial, options, checkpoint_step);
  if (replicas.size() != kWorld) return {};
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    {
      torch::NoGradGuard no_grad;
      for (size_t l = 0; l < shapes.size(); ++l) {
        replicas[rank].parameters[l].second.copy_(
            saved_parameters[rank][l].second);
      }
    }
    const absl::Status loaded =
        replicas[rank].optimizer->LoadState(state_paths[rank]);
    EXPECT_TRUE(loaded.ok()) << loaded;
    EXPECT_EQ(replicas[rank].optimizer->step(), checkpoint_step);
  }
  RunSteps(replicas, shapes, checkpoint_step, steps, nullptr,
           learning_rate_at);
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    for (size_t l = 0; l < shapes.size(); ++l) {
      EXPECT_TRUE(torch::equal(replicas[rank].parameters[l].second,
                               uninterrupted[l].second))
          << "rank " << rank << ", " << shapes[l].name;
    }
  }
  return uninterrupted;
}

TEST_F(DistributedOptimizerTest, ResumedRunEndsBitwiseWhereUninterruptedEnds) {
  const std::vector<LayerShape>& shapes = MixedModel();
  ExpectResumeEndsBitwise(shapes, InitialParameters(shapes),
                          OptimizerOptions(KeepPolicy::kEntropy), /*steps=*/6,
                          /*checkpoint_step=*/3, "resume");
}

// share_hold_steps = 4: windows start at steps 0, 4 and 8, so the checkpoint
// after step 5 falls inside a window, whose share the resumed run must take
// from the checkpoint rather than measure afresh.
// Under update-space accumulation the checkpoint carries the rate its
// residuals are in: a run resumed mid-schedule ends bitwise where the
// uninterrupted one ends (without that rate, the first rate set after the
// resume would scale them from the base rate instead).
TEST_F(DistributedOptimizerTest, UpdateSpaceResumeMidScheduleEndsBitwise) {
  const std::vector<LayerShape>& shapes = MixedModel();
  const NamedParameters initial = InitialParameters(shapes);
  DistributedOptimizerOptions options = OptimizerOptions(KeepPolicy::kTopK);
  options.accumulate_in_update_space = true;
  const NamedParameters uninterrupted = ExpectResumeEndsBitwise(
      shapes, initial, options, /*steps=*/8, /*checkpoint_step=*/4,
      "update-space-resume", [](int64_t step) {
        return kLearningRate * (1.0 - 0.1 * static_cast<double>(step));
      });
  ASSERT_EQ(uninterrupted.size(), shapes.size());
}

TEST_F(DistributedOptimizerTest, ResumedMidWindowEndsBitwiseWithAHeldShare) {
  const std::vector<LayerShape>& shapes = MixedModel();
  const NamedParameters initial = InitialParameters(shapes);
  DistributedOptimizerOptions held = OptimizerOptions(KeepPolicy::kEntropy);
  held.compression.share_hold_steps = 4;
  constexpr int64_t kSteps = 10;
  const NamedParameters with_hold = ExpectResumeEndsBitwise(
      shapes, initial, held, kSteps, /*checkpoint_step=*/6, "held");
  ASSERT_EQ(with_hold.size(), shapes.size());

  // The hold changed the run: without it the weight ends elsewhere.
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  std::vector<Replica> replicas = ConnectReplicas(
      shards, "not-held", initial, OptimizerOptions(KeepPolicy::kEntropy));
  ASSERT_EQ(replicas.size(), kWorld);
  RunSteps(replicas, shapes, 0, kSteps);
  EXPECT_FALSE(torch::equal(replicas[0].parameters[0].second,
                            with_hold[0].second));
}

TEST_F(DistributedOptimizerTest, HeldShareMustMatchTheOptionsOfTheCheckpoint) {
  const std::vector<LayerShape>& shapes = MixedModel();
  const NamedParameters initial = InitialParameters(shapes);
  DistributedOptimizerOptions held_options =
      OptimizerOptions(KeepPolicy::kEntropy);
  held_options.compression.share_hold_steps = 4;
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  std::vector<Replica> held =
      ConnectReplicas(shards, "held-options", initial, held_options);
  std::vector<Replica> plain = ConnectReplicas(
      shards, "plain-options", initial, OptimizerOptions(KeepPolicy::kEntropy));
  ASSERT_EQ(held.size(), kWorld);
  ASSERT_EQ(plain.size(), kWorld);
  RunSteps(held, shapes, 0, 2);
  RunSteps(plain, shapes, 0, 2);
  const std::string held_path = TempPath("held_share.pt");
  const std::string plain_path = TempPath("no_held_share.pt");
  ENTROGRAD_ASSERT_OK(held[0].optimizer->SaveState(held_path));
  ENTROGRAD_ASSERT_OK(plain[0].optimizer->SaveState(plain_path));

  EXPECT_THAT(held[0].optimizer->LoadState(plain_path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "has no held_share_0 for \"fc.weight\": "
                           "share_hold_steps = 4"));
  EXPECT_THAT(plain[0].optimizer->LoadState(held_path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "holds held_share_0 for \"fc.weight\", but "
                           "share_hold_steps is 1"));
  // A held share that is no share: refused, naming it.
  {
    torch::serialize::InputArchive in;
    in.load_from(held_path);
    torch::serialize::OutputArchive out;
    for (const std::string& key : in.keys()) {
      torch::Tensor value;
      in.read(key, value);
      if (key == "held_share_0") {
        value = torch::tensor({0.0, 1.5}, torch::kFloat64);
      }
      out.write(key, value);
    }
    out.save_to(held_path);
  }
  EXPECT_THAT(held[0].optimizer->LoadState(held_path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "held_share_0 of \"fc.weight\": held share "
                           "effective_fraction = 1.5"));
  EXPECT_EQ(held[0].optimizer->step(), 2);
  EXPECT_EQ(plain[0].optimizer->step(), 2);
}

TEST_F(DistributedOptimizerTest, CheckpointWithoutMomentumBufferIsRefused) {
  Shards shards(1);
  ASSERT_TRUE(shards.ok());
  const std::vector<LayerShape>& shapes = MixedModel();
  const NamedParameters initial = InitialParameters(shapes);
  std::vector<Replica> replicas = ConnectReplicas(
      shards, "old-checkpoint", initial, OptimizerOptions(KeepPolicy::kEntropy));
  ASSERT_EQ(replicas.size(), kWorld);
  RunSteps(replicas, shapes, 0, 2);
  DistributedOptimizer& optimizer = *replicas[0].optimizer;

  // What SaveState wrote before layers sent whole kept a momentum buffer.
  const std::string path = TempPath("old_format.pt");
  {
    torch::serialize::OutputArchive archive;
    archive.write("step", torch::tensor(int64_t{7}, torch::kInt64));
    archive.write("layers", torch::tensor(int64_t{2}, torch::kInt64));
    for (size_t l = 0; l < shapes.size(); ++l) {
      const int64_t numel = replicas[0].parameters[l].second.numel();
      archive.write(absl::StrCat("residual_", l), torch::zeros({numel}));
      archive.write(absl::StrCat("velocity_", l), torch::zeros({numel}));
    }
    archive.save_to(path);
  }
  const std::string before = TempPath("before.pt");
  ENTROGRAD_ASSERT_OK(optimizer.SaveState(before));
  EXPECT_THAT(optimizer.LoadState(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "has no momentum_buffer_1 for \"fc.bias\""));
  EXPECT_EQ(optimizer.step(), 2);
  // Nothing changed: the state saved again is the state saved before.
  const std::string after = TempPath("after.pt");
  ENTROGRAD_ASSERT_OK(optimizer.SaveState(after));
  for (const std::string key :
       {"residual_0", "velocity_0", "residual_1", "momentum_buffer_1"}) {
    torch::serialize::InputArchive a, b;
    a.load_from(before);
    b.load_from(after);
    torch::Tensor x, y;
    a.read(key, x);
    b.read(key, y);
    EXPECT_TRUE(torch::equal(x, y)) << key;
  }
}

}  // namespace
}  // namespace entrograd::testing
