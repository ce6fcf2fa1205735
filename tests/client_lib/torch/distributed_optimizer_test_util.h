// Helpers for the unit tests of DistributedOptimizer that need no
// aggregator: a RecordingClient (an entrograd::Client that records what the
// hooks and Step send and answers WaitMerged from a script, or with the
// round's own contribution), deterministic parameters and gradients, a
// backward pass that hands each parameter exactly the gradient asked for,
// bitwise tensor comparison, and checkpoint files read and written key by
// key.
#ifndef ENTROGRAD_TESTS_CLIENT_LIB_TORCH_DISTRIBUTED_OPTIMIZER_TEST_UTIL_H_
#define ENTROGRAD_TESTS_CLIENT_LIB_TORCH_DISTRIBUTED_OPTIMIZER_TEST_UTIL_H_

#include <torch/torch.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "entrograd/client.h"
#include "entrograd/codec.h"
#include "entrograd/torch/distributed_optimizer.h"
#include "gtest/gtest.h"

namespace entrograd::testing {

using NamedParameters = std::vector<std::pair<std::string, torch::Tensor>>;
// (step, layer): one round.
using Round = std::pair<int64_t, uint32_t>;

// A Client for one rank alone, with no network: SendLayer records each
// contribution, and WaitMerged returns for a round, in this order of
// precedence, the error scripted with FailWait, the payload scripted with
// SetMerged, or the round's own contribution (what an aggregator merges for
// a world of one rank: the sum over one rank divided by 1). A round neither
// scripted nor sent is FAILED_PRECONDITION instead of a wait, so a test
// never hangs. SendLayer refuses what the real client refuses that matters
// here (a round sent twice) and errors scripted with FailSend (such a round
// is recorded as refused, not as sent). Thread-safe, like the real client:
// hooks may call it from autograd threads.
class RecordingClient final : public Client {
 public:
  absl::Status SendLayer(LayerContribution contribution) override {
    absl::MutexLock lock(&mutex_);
    const Round round{contribution.step, contribution.layer};
    if (auto error = send_errors_.find(round); error != send_errors_.end()) {
      refused_sends_.push_back(round);
      return error->second;
    }
    if (sent_.count(round) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "step ", round.first, ", layer ", round.second, " already sent"));
    }
    send_order_.push_back(round);
    sent_.emplace(round, std::move(contribution));
    return absl::OkStatus();
  }

  absl::StatusOr<MergedLayerUpdate> WaitMerged(int64_t step,
                                               uint32_t layer) override {
    absl::MutexLock lock(&mutex_);
    const Round round{step, layer};
    waits_.push_back(round);
    if (auto error = wait_errors_.find(round); error != wait_errors_.end()) {
      return error->second;
    }
    MergedLayerUpdate update;
    update.step = step;
    update.layer = layer;
    if (auto merged = scripted_.find(round); merged != scripted_.end()) {
      update.payload = merged->second;
      return update;
    }
    auto sent = sent_.find(round);
    if (sent == sent_.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("RecordingClient: step ", step, ", layer ", layer,
                       " was neither sent nor scripted"));
    }
    const LayerContribution& contribution = sent->second;
    update.payload.numel = contribution.numel;
    update.payload.dense = contribution.dense;
    update.payload.indices = contribution.indices;
    update.payload.values = contribution.values;
    // One rank's merge, sent back in the type it came in (a lossy type
    // rounds each value once: rounding again changes nothing).
    update.payload.value_type = value_type_;
    for (float& value : update.payload.values) {
      value = RoundToValueType(value_type_, value);
    }
    return update;
  }

  void MarkApplied(int64_t step) override {
    absl::MutexLock lock(&mutex_);
    applied_.push_back(step);
  }
  ClientTraffic traffic() const override { return {}; }
  ValueType value_type() const override {
    absl::MutexLock lock(&mutex_);
    return value_type_;
  }
  // What value_type() reports and merged updates of sent rounds come back
  // rounded to (default exact float32).
  void set_value_type(ValueType type) {
    absl::MutexLock lock(&mutex_);
    value_type_ = type;
  }
  void Close() override {}

  // Script: SendLayer of `round` returns `status`; WaitMerged of `round`
  // returns `status`; WaitMerged of `round` returns `payload`.
  void FailSend(Round round, absl::Status status) {
    absl::MutexLock lock(&mutex_);
    send_errors_[round] = std::move(status);
  }
  void FailWait(Round round, absl::Status status) {
    absl::MutexLock lock(&mutex_);
    wait_errors_[round] = std::move(status);
  }
  void SetMerged(Round round, DecodedPayload payload) {
    absl::MutexLock lock(&mutex_);
    scripted_[round] = std::move(payload);
  }

  // What was sent for `round`, if anything.
  std::optional<LayerContribution> Sent(Round round) const {
    absl::MutexLock lock(&mutex_);
    auto sent = sent_.find(round);
    if (sent == sent_.end()) return std::nullopt;
    return sent->second;
  }
  // Rounds in the order SendLayer accepted them.
  std::vector<Round> send_order() const {
    absl::MutexLock lock(&mutex_);
    return send_order_;
  }
  // Rounds whose SendLayer returned a FailSend error, in order.
  std::vector<Round> refused_sends() const {
    absl::MutexLock lock(&mutex_);
    return refused_sends_;
  }
  // Rounds in the order WaitMerged was called for them.
  std::vector<Round> waits() const {
    absl::MutexLock lock(&mutex_);
    return waits_;
  }
  // Steps passed to MarkApplied, in order.
  std::vector<int64_t> applied() const {
    absl::MutexLock lock(&mutex_);
    return applied_;
  }

 private:
  mutable absl::Mutex mutex_;
  std::map<Round, absl::Status> send_errors_ ABSL_GUARDED_BY(mutex_);
  std::map<Round, absl::Status> wait_errors_ ABSL_GUARDED_BY(mutex_);
  std::map<Round, DecodedPayload> scripted_ ABSL_GUARDED_BY(mutex_);
  std::map<Round, LayerContribution> sent_ ABSL_GUARDED_BY(mutex_);
  std::vector<Round> send_order_ ABSL_GUARDED_BY(mutex_);
  std::vector<Round> refused_sends_ ABSL_GUARDED_BY(mutex_);
  std::vector<Round> waits_ ABSL_GUARDED_BY(mutex_);
  std::vector<int64_t> applied_ ABSL_GUARDED_BY(mutex_);
  ValueType value_type_ ABSL_GUARDED_BY(mutex_) = ValueType::kF32;
};

// The flat float32 vector a contribution stands for: its values at its
// indices (all of them when dense), zero elsewhere.
inline torch::Tensor Densify(const LayerContribution& contribution) {
  torch::Tensor dense =
      torch::zeros({static_cast<int64_t>(contribution.numel)}, torch::kFloat32);
  float* data = dense.data_ptr<float>();
  if (contribution.dense) {
    std::memcpy(data, contribution.values.data(),
                contribution.values.size() * sizeof(float));
  } else {
    for (size_t j = 0; j < contribution.indices.size(); ++j) {
      data[contribution.indices[j]] = contribution.values[j];
    }
  }
  return dense;
}

// Normal values of standard deviation `scale`, never exactly zero (a zero
// gradient entry would make "which entries were sent" ambiguous).
inline torch::Tensor NonzeroNormal(const std::vector<int64_t>& sizes,
                                   uint32_t seed, float scale) {
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

struct LayerShape {
  std::string name;
  std::vector<int64_t> sizes;
};

// A weight compressed by the policy (5000 elements >= dense_below 1024) and
// a bias sent whole (20 < 1024): the two ways a layer is handled.
constexpr size_t kWeight = 0;
constexpr size_t kBias = 1;
inline std::vector<LayerShape> WeightAndBias() {
  return {{"fc.weight", {20, 250}}, {"fc.bias", {20}}};
}

// Leaf parameters requiring grad, the same for the same shapes.
inline NamedParameters MakeParameters(const std::vector<LayerShape>& shapes) {
  NamedParameters parameters;
  for (size_t l = 0; l < shapes.size(); ++l) {
    parameters.emplace_back(
        shapes[l].name,
        NonzeroNormal(shapes[l].sizes, 1000 + static_cast<uint32_t>(l), 0.1f)
            .set_requires_grad(true));
  }
  return parameters;
}

inline NamedParameters CloneParameters(const NamedParameters& parameters) {
  NamedParameters copy;
  for (const auto& [name, tensor] : parameters) {
    copy.emplace_back(name, tensor.detach().clone().set_requires_grad(true));
  }
  return copy;
}

// The gradient of layer `layer` at `step`; `seed` picks another sequence.
inline torch::Tensor GradientOf(const NamedParameters& parameters, size_t layer,
                                int64_t step, uint32_t seed = 0) {
  return NonzeroNormal(
      parameters[layer].second.sizes().vec(),
      static_cast<uint32_t>(7919 * step + 101 * layer + 65537 * seed), 0.5f);
}

// One backward pass of sum over layers of sum(p * g): each parameter whose
// gradient is defined receives exactly that gradient; the others receive
// none. At least one gradient must be defined.
inline void BackwardWith(const NamedParameters& parameters,
                         const std::vector<torch::Tensor>& gradients) {
  torch::Tensor loss = torch::zeros({}, torch::kFloat32);
  for (size_t l = 0; l < parameters.size(); ++l) {
    if (gradients[l].defined()) {
      loss = loss + (parameters[l].second * gradients[l]).sum();
    }
  }
  loss.backward();
}

// Every layer's GradientOf at `step`.
inline std::vector<torch::Tensor> GradientsAt(const NamedParameters& parameters,
                                              int64_t step, uint32_t seed = 0) {
  std::vector<torch::Tensor> gradients;
  for (size_t l = 0; l < parameters.size(); ++l) {
    gradients.push_back(GradientOf(parameters, l, step, seed));
  }
  return gradients;
}

// Backward with GradientsAt(step, seed), then Step(), for steps
// [first, last). Stops at the first error and returns it.
inline absl::Status TrainSteps(DistributedOptimizer& optimizer,
                               const NamedParameters& parameters, int64_t first,
                               int64_t last, uint32_t seed = 0) {
  for (int64_t step = first; step < last; ++step) {
    BackwardWith(parameters, GradientsAt(parameters, step, seed));
    absl::Status status = optimizer.Step();
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// Same dtype, shape and bytes (so -0.0 differs from +0.0 and NaN payloads
// count), unlike torch::equal, which compares values.
inline bool BitwiseEqual(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || !a.sizes().equals(b.sizes())) {
    return false;
  }
  const torch::Tensor x = a.detach().cpu().contiguous();
  const torch::Tensor y = b.detach().cpu().contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

// The options the adapter is meant to train SGD + momentum with.
inline DistributedOptimizerOptions MomentumCorrectionOptions(
    KeepPolicy policy = KeepPolicy::kTopK) {
  DistributedOptimizerOptions options;
  options.compression.policy = policy;
  options.compression.rho = 0.01;
  options.compression.momentum_correction = true;
  options.compression.momentum = 0.9;
  options.learning_rate = 0.1;
  return options;
}

// A fresh path in this process's test directory.
inline std::string TempPath(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) /
      absl::StrCat("distributed_optimizer_unit_test_", ::getpid());
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// A checkpoint file as a map from key to tensor, read and written whole, so
// that a test can change one key of a checkpoint SaveState wrote.
using Checkpoint = std::map<std::string, torch::Tensor>;

inline Checkpoint ReadCheckpoint(const std::string& path) {
  torch::serialize::InputArchive archive;
  archive.load_from(path);
  Checkpoint checkpoint;
  for (const std::string& key : archive.keys()) {
    torch::Tensor tensor;
    archive.read(key, tensor);
    checkpoint[key] = tensor;
  }
  return checkpoint;
}

inline void WriteCheckpoint(const Checkpoint& checkpoint,
                            const std::string& path) {
  torch::serialize::OutputArchive archive;
  for (const auto& [key, tensor] : checkpoint) archive.write(key, tensor);
  archive.save_to(path);
}

// SaveState of `optimizer`, read back.
inline Checkpoint StateOf(const DistributedOptimizer& optimizer,
                          const std::string& name) {
  const std::string path = TempPath(name);
  const absl::Status saved = optimizer.SaveState(path);
  EXPECT_TRUE(saved.ok()) << saved;
  if (!saved.ok()) return {};
  return ReadCheckpoint(path);
}

// The same keys, each tensor bitwise equal; names the first difference.
inline ::testing::AssertionResult CheckpointsEqual(const Checkpoint& a,
                                                   const Checkpoint& b) {
  for (const auto& [key, tensor] : a) {
    auto other = b.find(key);
    if (other == b.end()) {
      return ::testing::AssertionFailure() << key << " only in the first";
    }
    if (!BitwiseEqual(tensor, other->second)) {
      return ::testing::AssertionFailure() << key << " differs";
    }
  }
  for (const auto& [key, tensor] : b) {
    if (a.count(key) == 0) {
      return ::testing::AssertionFailure() << key << " only in the second";
    }
  }
  return ::testing::AssertionSuccess();
}

// Every test here runs LibTorch on one thread: the tensors are small, and the
// test machines' CPUs are shared.
class DistributedOptimizerFixture : public ::testing::Test {
 protected:
  void SetUp() override { torch::set_num_threads(1); }
};

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_CLIENT_LIB_TORCH_DISTRIBUTED_OPTIMIZER_TEST_UTIL_H_
