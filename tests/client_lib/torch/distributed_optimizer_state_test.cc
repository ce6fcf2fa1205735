// DistributedOptimizer::SaveState and LoadState: a round trip restores the
// step, every residual and velocity and the momentum buffers bitwise, so a
// restored optimizer continues exactly as the one that saved; a checkpoint
// that does not fit (layer count, sizes, types, non-finite values, a nonzero
// residual of a layer sent whole, a momentum buffer missing or extra) is
// refused with INVALID_ARGUMENT naming what is wrong, and the refused load
// changes nothing: the optimizer then continues bitwise like a twin that
// never tried.

#include <torch/torch.h>

#include <cctype>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "client_lib/torch/distributed_optimizer_test_util.h"
#include "entrograd/torch/distributed_optimizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

// A model, its client and its optimizer.
struct Trainee {
  NamedParameters parameters;
  std::unique_ptr<RecordingClient> client;
  std::unique_ptr<DistributedOptimizer> optimizer;
};

// A Trainee on a copy of `initial`; fails the test and returns one without
// an optimizer if Create fails.
Trainee MakeTrainee(const NamedParameters& initial,
                    const DistributedOptimizerOptions& options,
                    int64_t first_step = 0) {
  Trainee trainee;
  trainee.parameters = CloneParameters(initial);
  trainee.client = std::make_unique<RecordingClient>();
  auto optimizer = DistributedOptimizer::Create(
      trainee.parameters, options, trainee.client.get(), first_step);
  EXPECT_TRUE(optimizer.ok()) << optimizer.status();
  if (optimizer.ok()) trainee.optimizer = std::move(*optimizer);
  return trainee;
}

void CopyParameters(const NamedParameters& from, NamedParameters& to) {
  torch::NoGradGuard no_grad;
  for (size_t l = 0; l < from.size(); ++l) to[l].second.copy_(from[l].second);
}

bool AnyNonzero(const torch::Tensor& tensor) {
  return tensor.numel() > 0 && (tensor != 0).any().item<bool>();
}

class DistributedOptimizerStateTest : public DistributedOptimizerFixture {};

TEST_F(DistributedOptimizerStateTest,
       RoundTripRestoresStepResidualsVelocitiesAndMomentumBuffersBitwise) {
  const NamedParameters initial = MakeParameters(WeightAndBias());
  const DistributedOptimizerOptions options = MomentumCorrectionOptions();
  constexpr int64_t kSaveStep = 3;
  constexpr int64_t kEnd = 6;
  Trainee saver = MakeTrainee(initial, options);
  ASSERT_NE(saver.optimizer, nullptr);
  ENTROGRAD_ASSERT_OK(
      TrainSteps(*saver.optimizer, saver.parameters, 0, kSaveStep));
  const std::string path = TempPath("round_trip.pt");
  ENTROGRAD_ASSERT_OK(saver.optimizer->SaveState(path));

  // The checkpoint holds state worth restoring.
  const Checkpoint saved = ReadCheckpoint(path);
  ASSERT_EQ(saved.count("step"), 1u);
  EXPECT_EQ(saved.at("step").item<int64_t>(), kSaveStep);
  EXPECT_TRUE(AnyNonzero(saved.at("residual_0")));
  EXPECT_TRUE(AnyNonzero(saved.at("velocity_0")));
  EXPECT_TRUE(AnyNonzero(saved.at("momentum_buffer_1")));
  EXPECT_EQ(saved.count("momentum_buffer_0"), 0u);

  // A new optimizer (a new process, as it were) on the saved parameters.
  Trainee restored = MakeTrainee(initial, options);
  ASSERT_NE(restored.optimizer, nullptr);
  CopyParameters(saver.parameters, restored.parameters);
  ENTROGRAD_ASSERT_OK(restored.optimizer->LoadState(path));
  EXPECT_EQ(restored.optimizer->step(), kSaveStep);
  EXPECT_TRUE(
      CheckpointsEqual(StateOf(*restored.optimizer, "restored.pt"), saved));

  // Without the state, the same parameters continue differently: what the
  // comparison below tells apart.
  Trainee stateless = MakeTrainee(initial, options, kSaveStep);
  ASSERT_NE(stateless.optimizer, nullptr);
  CopyParameters(saver.parameters, stateless.parameters);

  ENTROGRAD_ASSERT_OK(
      TrainSteps(*saver.optimizer, saver.parameters, kSaveStep, kEnd));
  ENTROGRAD_ASSERT_OK(
      TrainSteps(*restored.optimizer, restored.parameters, kSaveStep, kEnd));
  ENTROGRAD_ASSERT_OK(
      TrainSteps(*stateless.optimizer, stateless.parameters, kSaveStep, kEnd));
  for (size_t l = 0; l < initial.size(); ++l) {
    SCOPED_TRACE(initial[l].first);
    EXPECT_TRUE(BitwiseEqual(restored.parameters[l].second,
                             saver.parameters[l].second));
    EXPECT_FALSE(BitwiseEqual(stateless.parameters[l].second,
                              saver.parameters[l].second));
  }
}

// Without momentum correction there is no velocity (its key holds an empty
// tensor) and no momentum buffer; the inner optimizer's state is the
// caller's (plain SGD here keeps none).
TEST_F(DistributedOptimizerStateTest, RoundTripWithoutMomentumCorrection) {
  const NamedParameters initial = MakeParameters(WeightAndBias());
  DistributedOptimizerOptions options = MomentumCorrectionOptions();
  options.compression.momentum_correction = false;
  NamedParameters saver_parameters = CloneParameters(initial);
  NamedParameters restored_parameters = CloneParameters(initial);
  torch::optim::SGD saver_sgd(
      {saver_parameters[0].second, saver_parameters[1].second},
      torch::optim::SGDOptions(0.1));
  torch::optim::SGD restored_sgd(
      {restored_parameters[0].second, restored_parameters[1].second},
      torch::optim::SGDOptions(0.1));
  RecordingClient saver_client, restored_client;
  options.inner_optimizer = &saver_sgd;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> saver,
      DistributedOptimizer::Create(saver_parameters, options, &saver_client));
  options.inner_optimizer = &restored_sgd;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> restored,
      DistributedOptimizer::Create(restored_parameters, options,
                                   &restored_client));
  ENTROGRAD_ASSERT_OK(TrainSteps(*saver, saver_parameters, 0, 2));
  const std::string path = TempPath("round_trip_plain.pt");
  ENTROGRAD_ASSERT_OK(saver->SaveState(path));
  const Checkpoint saved = ReadCheckpoint(path);
  EXPECT_TRUE(AnyNonzero(saved.at("residual_0")));
  EXPECT_EQ(saved.at("velocity_0").numel(), 0);
  EXPECT_EQ(saved.count("momentum_buffer_1"), 0u);

  CopyParameters(saver_parameters, restored_parameters);
  ENTROGRAD_ASSERT_OK(restored->LoadState(path));
  EXPECT_EQ(restored->step(), 2);
  EXPECT_TRUE(CheckpointsEqual(StateOf(*restored, "restored_plain.pt"), saved));
  ENTROGRAD_ASSERT_OK(TrainSteps(*saver, saver_parameters, 2, 4));
  ENTROGRAD_ASSERT_OK(TrainSteps(*restored, restored_parameters, 2, 4));
  for (size_t l = 0; l < initial.size(); ++l) {
    EXPECT_TRUE(
        BitwiseEqual(restored_parameters[l].second, saver_parameters[l].second))
        << initial[l].first;
  }
}

// One way a checkpoint can fail to fit: a change to a good checkpoint, and
// what the refusal must say.
struct BadCheckpoint {
  std::string what;
  std::function<void(Checkpoint&)> change;
  std::string message;  // a part of the INVALID_ARGUMENT message
};

void PrintTo(const BadCheckpoint& bad, std::ostream* os) { *os << bad.what; }

torch::Tensor WithElement(torch::Tensor tensor, int64_t index, float value) {
  tensor = tensor.clone();
  tensor.view({-1})[index] = value;
  return tensor;
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

const std::vector<BadCheckpoint>& BadCheckpoints() {
  static const auto* cases = new std::vector<BadCheckpoint>{
      {"three layers",
       [](Checkpoint& c) { c["layers"] = torch::tensor(int64_t{3}); },
       "holds 3 layers; the model has 2"},
      {"short residual",
       [](Checkpoint& c) {
         c["residual_0"] = c["residual_0"].slice(0, 0, 4999).clone();
       },
       "residual of \"fc.weight\" has 4999 elements; expected 5000"},
      {"short velocity of the second layer",
       [](Checkpoint& c) { c["velocity_1"] = torch::zeros({19}); },
       "\"fc.bias\": velocity has 19 elements; expected 20"},
      {"NaN in a residual",
       [](Checkpoint& c) {
         c["residual_0"] = WithElement(c["residual_0"], 10, kNaN);
       },
       "\"fc.weight\""},
      {"Inf in a velocity",
       [](Checkpoint& c) {
         c["velocity_0"] = WithElement(c["velocity_0"], 4999, kInf);
       },
       "\"fc.weight\""},
      {"nonzero residual of a layer sent whole",
       [](Checkpoint& c) {
         c["residual_1"] = WithElement(c["residual_1"], 0, 1.0f);
       },
       "\"fc.bias\""},
      {"NaN in a momentum buffer",
       [](Checkpoint& c) {
         c["momentum_buffer_1"] = WithElement(c["momentum_buffer_1"], 3, kNaN);
       },
       "momentum_buffer_1 of \"fc.bias\" holds a non-finite value"},
      {"float64 momentum buffer",
       [](Checkpoint& c) {
         c["momentum_buffer_1"] = c["momentum_buffer_1"].to(torch::kFloat64);
       },
       "momentum_buffer_1 of \"fc.bias\" is Double"},
      {"short momentum buffer",
       [](Checkpoint& c) { c["momentum_buffer_1"] = torch::zeros({19}); },
       "with 19 elements; expected Float with 20"},
      {"momentum buffer of a compressed layer",
       [](Checkpoint& c) { c["momentum_buffer_0"] = torch::zeros({5000}); },
       "holds momentum_buffer_0 for \"fc.weight\""},
      {"no momentum buffer",
       [](Checkpoint& c) { c.erase("momentum_buffer_1"); },
       "has no momentum_buffer_1 for \"fc.bias\""},
      {"no residual of the second layer",
       [](Checkpoint& c) { c.erase("residual_1"); },
       "loading optimizer state from"},
      // Read after the first layer's state would be restored.
      {"float64 residual of the second layer",
       [](Checkpoint& c) {
         c["residual_1"] = torch::zeros({20}, torch::kFloat64);
       },
       "\"fc.bias\""},
      {"float64 velocity of the second layer",
       [](Checkpoint& c) {
         c["velocity_1"] = torch::zeros({20}, torch::kFloat64);
       },
       "\"fc.bias\""},
  };
  return *cases;
}

// A target and its twin trained alike, and a good checkpoint from a third
// optimizer trained otherwise (other gradients, more steps), so that any
// part of it taken over would show.
class RefusedCheckpointTest
    : public DistributedOptimizerFixture,
      public ::testing::WithParamInterface<BadCheckpoint> {};

constexpr int64_t kTargetStep = 2;
constexpr int64_t kSourceStep = 5;

TEST_P(RefusedCheckpointTest, IsRefusedNamingWhatIsWrongAndChangesNothing) {
  const NamedParameters initial = MakeParameters(WeightAndBias());
  const DistributedOptimizerOptions options = MomentumCorrectionOptions();
  Trainee target = MakeTrainee(initial, options);
  Trainee twin = MakeTrainee(initial, options);
  Trainee source = MakeTrainee(initial, options);
  ASSERT_NE(target.optimizer, nullptr);
  ASSERT_NE(twin.optimizer, nullptr);
  ASSERT_NE(source.optimizer, nullptr);
  ENTROGRAD_ASSERT_OK(
      TrainSteps(*target.optimizer, target.parameters, 0, kTargetStep));
  ENTROGRAD_ASSERT_OK(
      TrainSteps(*twin.optimizer, twin.parameters, 0, kTargetStep));
  ENTROGRAD_ASSERT_OK(TrainSteps(*source.optimizer, source.parameters, 0,
                                 kSourceStep, /*seed=*/1));
  const std::string good = TempPath("good.pt");
  ENTROGRAD_ASSERT_OK(source.optimizer->SaveState(good));
  Checkpoint checkpoint = ReadCheckpoint(good);
  ASSERT_FALSE(CheckpointsEqual(
      checkpoint, StateOf(*target.optimizer, "target_before.pt")));

  GetParam().change(checkpoint);
  const std::string bad = TempPath("bad.pt");
  WriteCheckpoint(checkpoint, bad);
  EXPECT_THAT(target.optimizer->LoadState(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, GetParam().message));

  EXPECT_EQ(target.optimizer->step(), kTargetStep);
  EXPECT_TRUE(CheckpointsEqual(StateOf(*target.optimizer, "target_after.pt"),
                               StateOf(*twin.optimizer, "twin.pt")));
  ENTROGRAD_ASSERT_OK(TrainSteps(*target.optimizer, target.parameters,
                                 kTargetStep, kTargetStep + 2));
  ENTROGRAD_ASSERT_OK(TrainSteps(*twin.optimizer, twin.parameters, kTargetStep,
                                 kTargetStep + 2));
  for (size_t l = 0; l < initial.size(); ++l) {
    EXPECT_TRUE(
        BitwiseEqual(target.parameters[l].second, twin.parameters[l].second))
        << initial[l].first;
  }
}

INSTANTIATE_TEST_SUITE_P(
    DistributedOptimizerStateTest, RefusedCheckpointTest,
    ::testing::ValuesIn(BadCheckpoints()),
    [](const ::testing::TestParamInfo<BadCheckpoint>& info) {
      std::string name;
      for (char c : info.param.what) {
        name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      }
      return name;
    });

TEST_F(DistributedOptimizerStateTest, FileThatIsNoCheckpointIsRefused) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, MomentumCorrectionOptions(),
                                   &client, /*first_step=*/4));
  const std::string text = TempPath("not_a_checkpoint.pt");
  std::ofstream(text) << "step = 12\n";
  EXPECT_THAT(optimizer->LoadState(text),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "loading optimizer state from " + text));
  EXPECT_THAT(optimizer->LoadState(TempPath("missing.pt")),
              StatusIs(absl::StatusCode::kInvalidArgument, "missing.pt"));
  EXPECT_EQ(optimizer->step(), 4);
}

}  // namespace
}  // namespace entrograd::testing
