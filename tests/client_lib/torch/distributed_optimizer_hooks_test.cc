// DistributedOptimizer's gradient hooks, against a RecordingClient: each
// parameter's hook compresses its layer (ALGORITHM.md 5.1-5.7) and sends it
// during backward, before Step(); a layer without a gradient is sent by
// Step() as if its gradient were zero, so its round completes; weight decay
// is added before compression; a frozen parameter is refused up front; and
// no hook outlives the optimizer.

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
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
using ::testing::UnorderedElementsAre;

class DistributedOptimizerHooksTest : public DistributedOptimizerFixture {};

TEST_F(DistributedOptimizerHooksTest, BackwardSendsEveryLayerFromItsHook) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, MomentumCorrectionOptions(),
                                   &client));
  const std::vector<torch::Tensor> gradients = GradientsAt(parameters, 0);
  BackwardWith(parameters, gradients);

  // Sent by the hooks: Step() has not run (nothing waited for yet).
  EXPECT_THAT(client.send_order(),
              UnorderedElementsAre(Round{0, kWeight}, Round{0, kBias}));
  EXPECT_THAT(client.waits(), IsEmpty());

  // The weight: top-k of A = G + V = 0 + (0.9 * 0 + u) = u on the first
  // step, k = round(0.01 * 5000) = 50, the gradient's own values.
  const std::optional<LayerContribution> weight = client.Sent({0, kWeight});
  ASSERT_TRUE(weight.has_value());
  EXPECT_EQ(weight->numel, 5000u);
  EXPECT_FALSE(weight->dense);
  ASSERT_EQ(weight->indices.size(), 50u);
  ASSERT_EQ(weight->values.size(), 50u);
  const torch::Tensor flat = gradients[kWeight].reshape({-1});
  const float* g = flat.data_ptr<float>();
  std::vector<bool> selected(5000, false);
  float smallest_sent = INFINITY;
  for (size_t j = 0; j < weight->indices.size(); ++j) {
    const uint32_t i = weight->indices[j];
    if (j > 0) {
      EXPECT_LT(weight->indices[j - 1], i);
    }
    EXPECT_EQ(weight->values[j], g[i]) << "index " << i;
    selected[i] = true;
    smallest_sent = std::min(smallest_sent, std::fabs(g[i]));
  }
  float largest_kept = 0.0f;
  for (int64_t i = 0; i < 5000; ++i) {
    if (!selected[i]) largest_kept = std::max(largest_kept, std::fabs(g[i]));
  }
  EXPECT_GE(smallest_sent, largest_kept);

  // The bias, sent whole: exactly its gradient.
  const std::optional<LayerContribution> bias = client.Sent({0, kBias});
  ASSERT_TRUE(bias.has_value());
  EXPECT_TRUE(bias->dense);
  EXPECT_TRUE(BitwiseEqual(Densify(*bias), gradients[kBias]));

  // Step() sends nothing more for layers whose hook fired.
  ENTROGRAD_ASSERT_OK(optimizer->Step());
  EXPECT_EQ(client.send_order().size(), 2u);
}

TEST_F(DistributedOptimizerHooksTest, LayerWithoutGradientIsSentAsZeroByStep) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, MomentumCorrectionOptions(),
                                   &client));
  // Step 0: only the weight has a gradient.
  const torch::Tensor bias_before = parameters[kBias].second.detach().clone();
  BackwardWith(parameters, {GradientOf(parameters, kWeight, 0), {}});
  EXPECT_FALSE(client.Sent({0, kBias}).has_value());
  ENTROGRAD_ASSERT_OK(optimizer->Step());
  const std::optional<LayerContribution> bias = client.Sent({0, kBias});
  ASSERT_TRUE(bias.has_value()) << "the bias's round would never complete";
  EXPECT_TRUE(BitwiseEqual(Densify(*bias), torch::zeros({20})));
  EXPECT_TRUE(BitwiseEqual(parameters[kBias].second, bias_before));
}

// A compressed layer keeps a residual and a velocity, which a step without
// a gradient still moves (V <- mu V, G <- A; ALGORITHM.md 5.1, 5.2): Step()
// must compress it exactly as a zero gradient, not skip or fake it.
TEST_F(DistributedOptimizerHooksTest,
       CompressedLayerWithoutGradientSendsWhatAZeroGradientSends) {
  const NamedParameters initial = MakeParameters(WeightAndBias());
  NamedParameters without = CloneParameters(initial);
  NamedParameters zero = CloneParameters(initial);
  RecordingClient without_client, zero_client;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> without_optimizer,
      DistributedOptimizer::Create(without, MomentumCorrectionOptions(),
                                   &without_client));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> zero_optimizer,
      DistributedOptimizer::Create(zero, MomentumCorrectionOptions(),
                                   &zero_client));
  ENTROGRAD_ASSERT_OK(TrainSteps(*without_optimizer, without, 0, 1));
  ENTROGRAD_ASSERT_OK(TrainSteps(*zero_optimizer, zero, 0, 1));

  const torch::Tensor bias_gradient = GradientOf(initial, kBias, 1);
  BackwardWith(without, {{}, bias_gradient});
  EXPECT_FALSE(without_client.Sent({1, kWeight}).has_value());
  ENTROGRAD_ASSERT_OK(without_optimizer->Step());
  BackwardWith(zero, {torch::zeros({20, 250}), bias_gradient});
  ENTROGRAD_ASSERT_OK(zero_optimizer->Step());

  const std::optional<LayerContribution> sent =
      without_client.Sent({1, kWeight});
  const std::optional<LayerContribution> expected =
      zero_client.Sent({1, kWeight});
  ASSERT_TRUE(sent.has_value());
  ASSERT_TRUE(expected.has_value());
  EXPECT_EQ(sent->indices, expected->indices);
  EXPECT_TRUE(BitwiseEqual(Densify(*sent), Densify(*expected)));
  EXPECT_TRUE(CheckpointsEqual(StateOf(*without_optimizer, "without.pt"),
                               StateOf(*zero_optimizer, "zero.pt")));
  EXPECT_TRUE(BitwiseEqual(without[kWeight].second, zero[kWeight].second));
}

TEST_F(DistributedOptimizerHooksTest, WeightDecayIsAddedBeforeCompression) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  DistributedOptimizerOptions options = MomentumCorrectionOptions();
  options.weight_decay = 0.01;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, options, &client));
  const std::vector<torch::Tensor> gradients = GradientsAt(parameters, 0);
  BackwardWith(parameters, gradients);

  // u = g + wd * p, each operation rounded in float32 as LibTorch does.
  std::vector<torch::Tensor> decayed;
  for (size_t l = 0; l < parameters.size(); ++l) {
    decayed.push_back(gradients[l] +
                      parameters[l].second.detach() * options.weight_decay);
    ASSERT_FALSE(BitwiseEqual(decayed[l], gradients[l]));
  }
  const std::optional<LayerContribution> bias = client.Sent({0, kBias});
  ASSERT_TRUE(bias.has_value());
  EXPECT_TRUE(BitwiseEqual(Densify(*bias), decayed[kBias]));

  const std::optional<LayerContribution> weight = client.Sent({0, kWeight});
  ASSERT_TRUE(weight.has_value());
  ASSERT_EQ(weight->indices.size(), 50u);
  const torch::Tensor flat = decayed[kWeight].reshape({-1});
  for (size_t j = 0; j < weight->indices.size(); ++j) {
    EXPECT_EQ(weight->values[j], flat[weight->indices[j]].item<float>())
        << "index " << weight->indices[j];
  }
}

// entropy_budget needs every layer's entropy before any layer's keep count:
// the hooks only accumulate, and Step() selects and sends.
TEST_F(DistributedOptimizerHooksTest, EntropyBudgetSendsFromStepNotFromHooks) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  DistributedOptimizerOptions options =
      MomentumCorrectionOptions(KeepPolicy::kEntropyBudget);
  options.compression.budget_density = 0.01;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, options, &client));
  const std::vector<torch::Tensor> gradients = GradientsAt(parameters, 0);
  BackwardWith(parameters, gradients);
  EXPECT_THAT(client.send_order(), IsEmpty());

  ENTROGRAD_ASSERT_OK(optimizer->Step());
  EXPECT_THAT(client.send_order(),
              ElementsAre(Round{0, kWeight}, Round{0, kBias}));
  const std::optional<LayerContribution> weight = client.Sent({0, kWeight});
  ASSERT_TRUE(weight.has_value());
  EXPECT_FALSE(weight->dense);
  EXPECT_GT(weight->indices.size(), 0u);
  EXPECT_LT(weight->indices.size(), 5000u);
  const std::optional<LayerContribution> bias = client.Sent({0, kBias});
  ASSERT_TRUE(bias.has_value());
  EXPECT_TRUE(BitwiseEqual(Densify(*bias), gradients[kBias]));
}

// A parameter that requires no gradient would get no hook and no gradient:
// refused, naming it, before any hook is registered.
TEST_F(DistributedOptimizerHooksTest, FrozenParameterIsRefusedNamingIt) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  parameters[kBias].second.set_requires_grad(false);
  RecordingClient client;
  EXPECT_THAT(DistributedOptimizer::Create(
                  parameters, MomentumCorrectionOptions(), &client),
              StatusIs(absl::StatusCode::kInvalidArgument, "\"fc.bias\""));
  // No hook of the refused optimizer is left on the weight.
  BackwardWith(parameters, {GradientOf(parameters, kWeight, 0), {}});
  EXPECT_THAT(client.send_order(), IsEmpty());
}

TEST_F(DistributedOptimizerHooksTest, NoHookOutlivesTheOptimizer) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<DistributedOptimizer> optimizer,
        DistributedOptimizer::Create(parameters, MomentumCorrectionOptions(),
                                     &client));
    ENTROGRAD_ASSERT_OK(TrainSteps(*optimizer, parameters, 0, 1));
  }
  const std::vector<Round> sent = client.send_order();
  ASSERT_EQ(sent.size(), 2u);
  BackwardWith(parameters, GradientsAt(parameters, 1));
  EXPECT_EQ(client.send_order(), sent);
}

}  // namespace
}  // namespace entrograd::testing
