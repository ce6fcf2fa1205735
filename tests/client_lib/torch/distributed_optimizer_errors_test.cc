// DistributedOptimizer's errors (its header's file comment and Create):
// Create refuses bad input with INVALID_ARGUMENT naming what is wrong and
// leaves no hook behind; a client error from WaitMerged and an error in a
// hook come back from Step() with their code; LibTorch's c10::Error becomes
// INTERNAL; and after any failed Step() every later Step() is
// FAILED_PRECONDITION, sending and waiting for nothing.

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
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

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class DistributedOptimizerErrorsTest : public DistributedOptimizerFixture {};

// What Create is given; each case changes one thing.
struct CreateInputs {
  NamedParameters parameters;
  DistributedOptimizerOptions options;
  Client* client = nullptr;
};

struct CreateRefusal {
  std::string what;
  std::function<void(CreateInputs&)> change;
  std::string message;  // a part of the error message
};

TEST_F(DistributedOptimizerErrorsTest, CreateRefusesBadInputNamingIt) {
  const std::vector<CreateRefusal> refusals = {
      {"no client", [](CreateInputs& in) { in.client = nullptr; },
       "client is null"},
      {"no parameters", [](CreateInputs& in) { in.parameters.clear(); },
       "no parameters"},
      {"zero learning rate",
       [](CreateInputs& in) { in.options.learning_rate = 0.0; },
       "learning_rate = 0"},
      {"NaN learning rate",
       [](CreateInputs& in) {
         in.options.learning_rate = std::numeric_limits<double>::quiet_NaN();
       },
       "learning_rate = nan"},
      {"negative weight decay",
       [](CreateInputs& in) { in.options.weight_decay = -0.5; },
       "weight_decay = -0.5"},
      {"merged keep factor below 1",
       [](CreateInputs& in) { in.options.merged_keep_factor = 0.5; },
       "merged_keep_factor = 0.5"},
      {"NaN merged keep factor",
       [](CreateInputs& in) {
         in.options.merged_keep_factor =
             std::numeric_limits<double>::quiet_NaN();
       },
       "merged_keep_factor = nan"},
      {"compression option out of range",
       [](CreateInputs& in) { in.options.compression.rho = 0.0; },
       "CompressionOptions.rho"},
      {"momentum of 1",
       [](CreateInputs& in) { in.options.compression.momentum = 1.0; },
       "CompressionOptions.momentum"},
      {"no inner optimizer without momentum correction",
       [](CreateInputs& in) {
         in.options.compression.momentum_correction = false;
         in.options.inner_optimizer = nullptr;
       },
       "inner_optimizer"},
      {"float64 parameter",
       [](CreateInputs& in) {
         in.parameters[kBias].second =
             torch::zeros({20}, torch::kFloat64).set_requires_grad(true);
       },
       "\"fc.bias\" is Double"},
      {"parameter without elements",
       [](CreateInputs& in) {
         in.parameters.emplace_back(
             "empty.weight", torch::zeros({0, 3}).set_requires_grad(true));
       },
       "\"empty.weight\""},
  };
  {
    RecordingClient client;
    ENTROGRAD_ASSERT_OK(
        DistributedOptimizer::Create(MakeParameters(WeightAndBias()),
                                     MomentumCorrectionOptions(), &client)
            .status())
        << "the inputs every case changes must be accepted as they are";
  }
  for (const CreateRefusal& refusal : refusals) {
    SCOPED_TRACE(refusal.what);
    RecordingClient client;
    CreateInputs in{MakeParameters(WeightAndBias()),
                    MomentumCorrectionOptions(), &client};
    refusal.change(in);
    EXPECT_THAT(
        DistributedOptimizer::Create(in.parameters, in.options, in.client),
        StatusIs(absl::StatusCode::kInvalidArgument, refusal.message));
    // No hook of a refused optimizer is left on the parameters.
    if (!in.parameters.empty()) {
      torch::Tensor loss = torch::zeros({}, torch::kFloat64);
      for (const auto& [name, parameter] : in.parameters) {
        loss = loss + parameter.sum();
      }
      loss.backward();
    }
    EXPECT_THAT(client.send_order(), IsEmpty());
  }
}

TEST_F(DistributedOptimizerErrorsTest,
       WaitMergedErrorComesBackFromStepThenStepIsRefused) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  client.FailWait({0, kBias},
                  absl::AbortedError("round aborted: rank 1 stopped"));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, MomentumCorrectionOptions(),
                                   &client));
  const absl::Status failed = TrainSteps(*optimizer, parameters, 0, 1);
  EXPECT_THAT(failed, StatusIs(absl::StatusCode::kAborted,
                               "round aborted: rank 1 stopped"));
  EXPECT_THAT(failed, StatusIs(absl::StatusCode::kAborted, "\"fc.bias\""));
  EXPECT_EQ(optimizer->step(), 0);
  EXPECT_THAT(client.applied(), IsEmpty());

  // The next step: refused, naming the first error, and nothing is sent or
  // waited for.
  const size_t sends = client.send_order().size();
  const size_t waits = client.waits().size();
  EXPECT_THAT(TrainSteps(*optimizer, parameters, 0, 1),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "round aborted: rank 1 stopped"));
  EXPECT_EQ(client.send_order().size(), sends);
  EXPECT_EQ(client.waits().size(), waits);
  EXPECT_EQ(optimizer->step(), 0);
}

TEST_F(DistributedOptimizerErrorsTest, HookErrorComesBackFromStep) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  client.FailSend({0, kWeight},
                  absl::ResourceExhaustedError(
                      "layer 0: update of 2000 bytes exceeds the limit"));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, MomentumCorrectionOptions(),
                                   &client));
  const torch::Tensor weight_before =
      parameters[kWeight].second.detach().clone();
  BackwardWith(parameters, GradientsAt(parameters, 0));
  // The hook's send was refused during backward; Step() reports it.
  EXPECT_THAT(client.refused_sends(), ElementsAre(Round{0, kWeight}));
  EXPECT_THAT(optimizer->Step(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       "update of 2000 bytes exceeds the limit"));
  // Step() returned before waiting for or applying anything.
  EXPECT_THAT(client.waits(), IsEmpty());
  EXPECT_TRUE(BitwiseEqual(parameters[kWeight].second, weight_before));
  EXPECT_THAT(TrainSteps(*optimizer, parameters, 0, 1),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "update of 2000 bytes exceeds the limit"));
  EXPECT_THAT(client.waits(), IsEmpty());
}

TEST_F(DistributedOptimizerErrorsTest, NonFiniteGradientIsRefusedNamingIt) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, MomentumCorrectionOptions(),
                                   &client));
  std::vector<torch::Tensor> gradients = GradientsAt(parameters, 0);
  gradients[kWeight].view({-1})[1234] = std::numeric_limits<float>::quiet_NaN();
  BackwardWith(parameters, gradients);
  EXPECT_THAT(optimizer->Step(),
              StatusIs(absl::StatusCode::kInvalidArgument, "\"fc.weight\""));
  EXPECT_FALSE(client.Sent({0, kWeight}).has_value())
      << "a NaN would reach the other ranks";
}

TEST_F(DistributedOptimizerErrorsTest,
       SecondBackwardWithoutStepIsFailedPrecondition) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, MomentumCorrectionOptions(),
                                   &client));
  BackwardWith(parameters, GradientsAt(parameters, 0));
  BackwardWith(parameters, GradientsAt(parameters, 1));
  EXPECT_THAT(optimizer->Step(), StatusIs(absl::StatusCode::kFailedPrecondition,
                                          "got a second gradient in step 0"));
}

// An inner optimizer whose step throws as LibTorch does (TORCH_CHECK).
class ThrowingOptimizer : public torch::optim::Optimizer {
 public:
  explicit ThrowingOptimizer(std::vector<torch::Tensor> parameters)
      : Optimizer(std::move(parameters),
                  std::make_unique<torch::optim::SGDOptions>(0.1)) {}
  torch::Tensor step(LossClosure /*closure*/) override {
    TORCH_CHECK(false, "inner step failed: parameter on the wrong device");
    return {};
  }
};

TEST_F(DistributedOptimizerErrorsTest, LibTorchErrorInStepBecomesInternal) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  ThrowingOptimizer inner({parameters[0].second, parameters[1].second});
  RecordingClient client;
  DistributedOptimizerOptions options = MomentumCorrectionOptions();
  options.compression.momentum_correction = false;
  options.inner_optimizer = &inner;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, options, &client));
  EXPECT_THAT(TrainSteps(*optimizer, parameters, 0, 1),
              StatusIs(absl::StatusCode::kInternal,
                       "LibTorch: inner step failed: parameter on the wrong "
                       "device"));
  EXPECT_THAT(
      TrainSteps(*optimizer, parameters, 0, 1),
      StatusIs(absl::StatusCode::kFailedPrecondition, "inner step failed"));
}

TEST_F(DistributedOptimizerErrorsTest, BadLearningRateIsRefusedAndChangesNothing) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, MomentumCorrectionOptions(),
                                   &client));
  const double before = optimizer->learning_rate();
  for (double bad : {0.0, -0.1, std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(optimizer->set_learning_rate(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, "learning_rate = "));
    EXPECT_EQ(optimizer->learning_rate(), before);
  }
  ENTROGRAD_ASSERT_OK(optimizer->set_learning_rate(0.25 * before));
  EXPECT_EQ(optimizer->learning_rate(), 0.25 * before);

  // Without momentum correction the inner optimizer's rate rules.
  torch::optim::SGD inner({parameters[0].second, parameters[1].second},
                          torch::optim::SGDOptions(0.1));
  DistributedOptimizerOptions options = MomentumCorrectionOptions();
  options.compression.momentum_correction = false;
  options.inner_optimizer = &inner;
  RecordingClient other_client;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> with_inner,
      DistributedOptimizer::Create(parameters, options, &other_client));
  EXPECT_THAT(with_inner->set_learning_rate(0.05),
              StatusIs(absl::StatusCode::kFailedPrecondition, "inner optimizer"));
  // Update-space accumulation scales what momentum correction keeps.
  options.accumulate_in_update_space = true;
  EXPECT_THAT(DistributedOptimizer::Create(parameters, options, &other_client),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "accumulate_in_update_space needs momentum correction"));
}

// With update-space accumulation, a rate change that would overflow a
// residual in float32 is refused naming the parameter, and nothing changes:
// neither the rate nor any layer's state.
TEST_F(DistributedOptimizerErrorsTest, UpdateSpaceRateChangeThatOverflowsChangesNothing) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  DistributedOptimizerOptions options = MomentumCorrectionOptions();
  options.compression.dense_below = 0;  // both layers keep a residual
  options.accumulate_in_update_space = true;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, options, &client));
  const std::string path = TempPath("update_space_state.pt");
  ENTROGRAD_ASSERT_OK(optimizer->SaveState(path));
  torch::serialize::InputArchive archive;
  archive.load_from(path);
  torch::Tensor residual_0, residual_1, velocity_0, velocity_1;
  archive.read("residual_0", residual_0);
  archive.read("residual_1", residual_1);
  archive.read("velocity_0", velocity_0);
  archive.read("velocity_1", velocity_1);
  residual_0.fill_(1.0f);
  residual_1.fill_(1.0f);
  residual_1[0] = 3e38f;
  torch::serialize::OutputArchive changed;
  changed.write("step", torch::tensor(int64_t{0}, torch::kInt64));
  changed.write("layers", torch::tensor(int64_t{2}, torch::kInt64));
  changed.write("residual_0", residual_0);
  changed.write("residual_1", residual_1);
  changed.write("velocity_0", velocity_0);
  changed.write("velocity_1", velocity_1);
  changed.write("residual_rate",
                torch::tensor(optimizer->learning_rate(), torch::kFloat64));
  changed.save_to(path);
  ENTROGRAD_ASSERT_OK(optimizer->LoadState(path));
  const double before = optimizer->learning_rate();
  EXPECT_THAT(optimizer->set_learning_rate(before / 4),
              StatusIs(absl::StatusCode::kInvalidArgument, "residual[0]"));
  EXPECT_EQ(optimizer->learning_rate(), before);
  ENTROGRAD_ASSERT_OK(optimizer->SaveState(path));
  torch::serialize::InputArchive after;
  after.load_from(path);
  torch::Tensor residual_after;
  after.read("residual_0", residual_after);
  EXPECT_TRUE(torch::equal(residual_after, residual_0))
      << "the layer checked first was scaled before the refusal";
  // A rate change that fits scales every compressed layer by a / b.
  ENTROGRAD_ASSERT_OK(optimizer->set_learning_rate(before * 4));
  ENTROGRAD_ASSERT_OK(optimizer->SaveState(path));
  torch::serialize::InputArchive scaled;
  scaled.load_from(path);
  scaled.read("residual_0", residual_after);
  EXPECT_EQ(residual_after[0].item<float>(), 0.25f);
}

// A checkpoint says whether its residuals are in update units (the rate
// they are in) or gradient units; loading it under the other options would
// silently train differently, so it is refused, changing nothing.
TEST_F(DistributedOptimizerErrorsTest, CheckpointOfTheOtherAccumulationUnitsIsRefused) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  DistributedOptimizerOptions gradient_units = MomentumCorrectionOptions();
  DistributedOptimizerOptions update_units = gradient_units;
  update_units.accumulate_in_update_space = true;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> plain,
      DistributedOptimizer::Create(parameters, gradient_units, &client));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> scaled,
      DistributedOptimizer::Create(parameters, update_units, &client));
  const std::string plain_path = TempPath("gradient_units.pt");
  const std::string scaled_path = TempPath("update_units.pt");
  ENTROGRAD_ASSERT_OK(plain->SaveState(plain_path));
  ENTROGRAD_ASSERT_OK(scaled->set_learning_rate(0.02));
  ENTROGRAD_ASSERT_OK(scaled->SaveState(scaled_path));
  EXPECT_THAT(plain->LoadState(scaled_path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "holds residual_rate: it was written under "
                       "accumulate_in_update_space"));
  EXPECT_THAT(scaled->LoadState(plain_path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "has no residual_rate"));
  EXPECT_EQ(scaled->learning_rate(), 0.02);
  // The rate comes back with the residuals it describes.
  ENTROGRAD_ASSERT_OK(scaled->set_learning_rate(0.07));
  ENTROGRAD_ASSERT_OK(scaled->LoadState(scaled_path));
  EXPECT_EQ(scaled->learning_rate(), 0.02);
}

TEST_F(DistributedOptimizerErrorsTest, SaveStateThatCannotWriteIsInternal) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, MomentumCorrectionOptions(),
                                   &client));
  const std::string path = TempPath("no_such_directory/state.pt");
  EXPECT_THAT(optimizer->SaveState(path),
              StatusIs(absl::StatusCode::kInternal, path));
}

}  // namespace
}  // namespace entrograd::testing
