// How DistributedOptimizer::Step() applies merged updates (ALGORITHM.md 7),
// against a RecordingClient that returns scripted merged updates or, for a
// world of one rank, the round's own contribution. Each expectation is a
// reference computed here and compared bitwise:
// - momentum correction, compressed layer: plain SGD p <- p - lr * merged on
//   the merged entries only, whatever the parameter's memory layout;
// - momentum correction, layer sent whole: momentum SGD
//   B <- mu * B + merged; p <- p - lr * B;
// - no momentum correction: the merged update becomes p.grad and the inner
//   optimizer steps;
// and Step() clears the gradients, waits for every round of its step in layer
// order, marks the step applied and advances.

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "client_lib/torch/distributed_optimizer_test_util.h"
#include "entrograd/torch/distributed_optimizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

class DistributedOptimizerApplyTest : public DistributedOptimizerFixture {};

// p - lr * merged element by element in float32, the multiply and the
// subtraction each rounded once. (The build passes no -march, so x86-64
// code has no fused multiply-add to contract them into.)
torch::Tensor PlainSgdReference(const torch::Tensor& parameter,
                                const DecodedPayload& merged,
                                double learning_rate) {
  torch::Tensor expected =
      parameter.detach().contiguous().reshape({-1}).clone();
  float* p = expected.data_ptr<float>();
  const float lr = static_cast<float>(learning_rate);
  if (merged.dense) {
    for (size_t i = 0; i < merged.values.size(); ++i) {
      p[i] = p[i] - lr * merged.values[i];
    }
  } else {
    for (size_t j = 0; j < merged.indices.size(); ++j) {
      p[merged.indices[j]] = p[merged.indices[j]] - lr * merged.values[j];
    }
  }
  return expected;
}

DecodedPayload DenseMerged(uint32_t seed) {
  DecodedPayload merged;
  merged.numel = 5000;
  merged.dense = true;
  const torch::Tensor values = NonzeroNormal({5000}, seed, 0.5f);
  merged.values.assign(values.data_ptr<float>(),
                       values.data_ptr<float>() + values.numel());
  return merged;
}

TEST_F(DistributedOptimizerApplyTest,
       MomentumCorrectionAppliesPlainSgdToTheMergedEntriesOnly) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  const DistributedOptimizerOptions options = MomentumCorrectionOptions();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, options, &client));
  torch::Tensor& weight = parameters[kWeight].second;

  // Step 0: a sparse merged update, including the last element.
  DecodedPayload sparse;
  sparse.numel = 5000;
  sparse.indices = {3, 17, 4999};
  sparse.values = {0.5f, -1.25f, 3.0e-3f};
  client.SetMerged({0, kWeight}, sparse);
  torch::Tensor expected =
      PlainSgdReference(weight, sparse, options.learning_rate);
  ENTROGRAD_ASSERT_OK(TrainSteps(*optimizer, parameters, 0, 1));
  EXPECT_TRUE(BitwiseEqual(weight.reshape({-1}), expected));

  // Step 1: a merged update that came back dense.
  const DecodedPayload dense = DenseMerged(42);
  client.SetMerged({1, kWeight}, dense);
  expected = PlainSgdReference(weight, dense, options.learning_rate);
  ENTROGRAD_ASSERT_OK(TrainSteps(*optimizer, parameters, 1, 2));
  EXPECT_TRUE(BitwiseEqual(weight.reshape({-1}), expected));
}

// Global top-k: the compressed layer asks for the factor, the layer sent
// whole for the union; the entries the merged update leaves out go back
// into the residual (their velocity stays masked), and a dense merged
// update (every entry carried) leaves nothing out.
TEST_F(DistributedOptimizerApplyTest, GlobalTopKPutsBackWhatTheMergeLeftOut) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  DistributedOptimizerOptions options = MomentumCorrectionOptions();
  options.merged_keep_factor = 1.5;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, options, &client));
  const std::vector<torch::Tensor> gradients = GradientsAt(parameters, 0);
  BackwardWith(parameters, gradients);
  const std::optional<LayerContribution> weight = client.Sent({0, kWeight});
  const std::optional<LayerContribution> bias = client.Sent({0, kBias});
  ASSERT_TRUE(weight.has_value() && bias.has_value());
  EXPECT_EQ(weight->merged_keep_factor, 1.5);
  EXPECT_EQ(bias->merged_keep_factor, 0.0);
  ASSERT_EQ(weight->indices.size(), 50u);
  // The merge carries the even positions of what this rank sent, and one
  // index it did not send.
  DecodedPayload merged;
  merged.numel = 5000;
  for (size_t j = 0; j < weight->indices.size(); j += 2) {
    merged.indices.push_back(weight->indices[j]);
    merged.values.push_back(0.25f);
  }
  uint32_t other = 0;
  while (std::count(weight->indices.begin(), weight->indices.end(), other)) {
    ++other;
  }
  merged.indices.insert(
      std::lower_bound(merged.indices.begin(), merged.indices.end(), other),
      other);
  merged.values.push_back(0.25f);
  client.SetMerged({0, kWeight}, merged);
  const Checkpoint before = StateOf(*optimizer, "global_top_k_before");
  ENTROGRAD_ASSERT_OK(optimizer->Step());
  const Checkpoint after = StateOf(*optimizer, "global_top_k_after");
  torch::Tensor want = before.at("residual_0").clone();
  for (size_t j = 1; j < weight->indices.size(); j += 2) {
    want.data_ptr<float>()[weight->indices[j]] = weight->values[j];
  }
  EXPECT_TRUE(BitwiseEqual(after.at("residual_0"), want));
  // The velocity stays masked at every entry sent, applied or put back
  // (ALGORITHM.md 7: unmasking the put-back ones measured worse).
  torch::Tensor masked_velocity = before.at("velocity_0").clone();
  const torch::Tensor gradient = gradients[kWeight].contiguous().reshape({-1});
  for (uint32_t index : weight->indices) {
    ASSERT_EQ(masked_velocity.data_ptr<float>()[index], 0.0f);
    ASSERT_NE(gradient.data_ptr<float>()[index], 0.0f);
  }
  EXPECT_TRUE(BitwiseEqual(after.at("velocity_0"), masked_velocity));

  // Step 1: the merged update comes back dense; nothing goes back.
  BackwardWith(parameters, GradientsAt(parameters, 1));
  const Checkpoint sent = StateOf(*optimizer, "global_top_k_sent");
  client.SetMerged({1, kWeight}, DenseMerged(5));
  ENTROGRAD_ASSERT_OK(optimizer->Step());
  EXPECT_TRUE(BitwiseEqual(StateOf(*optimizer, "global_top_k_dense")
                               .at("residual_0"),
                           sent.at("residual_0")));
}

// A lossy wire value type (ALGORITHM.md 7): the aggregator received each
// sent value rounded, so what the rounding took off goes back into the
// residual, and the selection is conserved bitwise: rounded + residual ==
// the value selected. Union (every entry applied) and global top-k (the
// entries left out go back whole).
TEST_F(DistributedOptimizerApplyTest, LossyWireTypeKeepsTheRoundingError) {
  for (const double keep_factor : {0.0, 1.5}) {
    SCOPED_TRACE(keep_factor);
    NamedParameters parameters = MakeParameters(WeightAndBias());
    RecordingClient client;
    client.set_value_type(ValueType::kE5M2);
    DistributedOptimizerOptions options = MomentumCorrectionOptions();
    options.merged_keep_factor = keep_factor;
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        std::unique_ptr<DistributedOptimizer> optimizer,
        DistributedOptimizer::Create(parameters, options, &client));
    BackwardWith(parameters, GradientsAt(parameters, 0));
    const std::optional<LayerContribution> weight = client.Sent({0, kWeight});
    ASSERT_TRUE(weight.has_value());
    ASSERT_EQ(weight->indices.size(), 50u);
    // Under global top-k the merge carries the even positions only.
    std::vector<bool> applied(weight->indices.size(), true);
    if (keep_factor > 0.0) {
      DecodedPayload merged;
      merged.numel = 5000;
      merged.value_type = ValueType::kE5M2;
      for (size_t j = 0; j < weight->indices.size(); ++j) {
        applied[j] = j % 2 == 0;
        if (!applied[j]) continue;
        merged.indices.push_back(weight->indices[j]);
        merged.values.push_back(0.25f);
      }
      client.SetMerged({0, kWeight}, merged);
    }
    const Checkpoint before = StateOf(*optimizer, "lossy_before");
    ENTROGRAD_ASSERT_OK(optimizer->Step());
    const Checkpoint after = StateOf(*optimizer, "lossy_after");
    torch::Tensor want = before.at("residual_0").clone();
    int rounded_entries = 0;
    for (size_t j = 0; j < weight->indices.size(); ++j) {
      const float selected = weight->values[j];
      const float rounded = RoundToValueType(ValueType::kE5M2, selected);
      rounded_entries += rounded != selected;
      const float kept = applied[j] ? selected - rounded : selected;
      ASSERT_EQ(applied[j] ? rounded + kept : kept, selected) << j;
      want.data_ptr<float>()[weight->indices[j]] = kept;
    }
    // Gradients of random normals: e5m2 (2 mantissa bits) rounds nearly all.
    EXPECT_GT(rounded_entries, 40);
    EXPECT_TRUE(BitwiseEqual(after.at("residual_0"), want));
    // The bias is sent whole: no residual to keep its rounding in.
    EXPECT_EQ(after.at("residual_1").abs().sum().item<float>(), 0.0f);
  }
}

// A parameter whose memory is not contiguous (a transposed view, or a conv
// weight in channels-last format) holds the same values after the same
// merged update as a contiguous one: the layout changes no bits.
TEST_F(DistributedOptimizerApplyTest,
       NonContiguousParameterTakesTheSamePlainSgdBits) {
  const torch::Tensor values = NonzeroNormal({250, 20}, 7, 0.1f);
  NamedParameters parameters = {
      {"fc.weight", values.t().detach().set_requires_grad(true)}};
  ASSERT_FALSE(parameters[0].second.is_contiguous());
  RecordingClient client;
  const DistributedOptimizerOptions options = MomentumCorrectionOptions();
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, options, &client));
  const DecodedPayload dense = DenseMerged(43);
  client.SetMerged({0, 0}, dense);
  const torch::Tensor expected =
      PlainSgdReference(parameters[0].second, dense, options.learning_rate);
  ENTROGRAD_ASSERT_OK(TrainSteps(*optimizer, parameters, 0, 1));
  const torch::Tensor actual = parameters[0].second.contiguous().reshape({-1});
  EXPECT_TRUE(BitwiseEqual(actual, expected))
      << (actual != expected).sum().item<int64_t>()
      << " elements differ, max |difference| "
      << (actual - expected).abs().max().item<float>();
}

// Momentum SGD on the merged update of a layer sent whole, as the three
// formulas of ALGORITHM.md 7, each a LibTorch operation rounded in float32;
// with a world of one rank the merged update is the layer's own gradient.
torch::Tensor MomentumSgdReference(const torch::Tensor& initial,
                                   const std::vector<torch::Tensor>& merged,
                                   double momentum, double learning_rate) {
  torch::NoGradGuard no_grad;
  torch::Tensor parameter = initial.detach().clone();
  torch::Tensor buffer = torch::zeros_like(parameter);
  for (const torch::Tensor& update : merged) {
    buffer = buffer * momentum + update;
    parameter = parameter - buffer * learning_rate;
  }
  return parameter;
}

torch::Tensor PlainSgdOf(const torch::Tensor& initial,
                         const std::vector<torch::Tensor>& merged,
                         double learning_rate) {
  torch::NoGradGuard no_grad;
  torch::Tensor parameter = initial.detach().clone();
  for (const torch::Tensor& update : merged) {
    parameter = parameter - update * learning_rate;
  }
  return parameter;
}

// Steps 0..2 with the RecordingClient's echo; expects momentum SGD on each
// layer in `whole`.
void ExpectMomentumSgdOnLayersSentWhole(KeepPolicy policy,
                                        const std::vector<size_t>& whole) {
  const NamedParameters initial = MakeParameters(WeightAndBias());
  NamedParameters parameters = CloneParameters(initial);
  RecordingClient client;
  const DistributedOptimizerOptions options = MomentumCorrectionOptions(policy);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, options, &client));
  constexpr int64_t kSteps = 3;
  ENTROGRAD_ASSERT_OK(TrainSteps(*optimizer, parameters, 0, kSteps));
  for (size_t l : whole) {
    SCOPED_TRACE(initial[l].first);
    std::vector<torch::Tensor> merged;
    for (int64_t step = 0; step < kSteps; ++step) {
      const std::optional<LayerContribution> sent =
          client.Sent({step, static_cast<uint32_t>(l)});
      ASSERT_TRUE(sent.has_value());
      ASSERT_TRUE(sent->dense);
      merged.push_back(GradientOf(initial, l, step));
      ASSERT_TRUE(BitwiseEqual(Densify(*sent), merged.back().reshape({-1})));
    }
    const torch::Tensor expected = MomentumSgdReference(
        initial[l].second, merged, options.compression.momentum,
        options.learning_rate);
    ASSERT_FALSE(BitwiseEqual(expected, PlainSgdOf(initial[l].second, merged,
                                                   options.learning_rate)));
    EXPECT_TRUE(BitwiseEqual(parameters[l].second, expected));
  }
}

TEST_F(DistributedOptimizerApplyTest,
       SmallLayerTakesMomentumSgdOnMergedUpdate) {
  ExpectMomentumSgdOnLayersSentWhole(KeepPolicy::kTopK, {kBias});
}

TEST_F(DistributedOptimizerApplyTest, DensePolicyTakesMomentumSgdOnEveryLayer) {
  ExpectMomentumSgdOnLayersSentWhole(KeepPolicy::kDense, {kWeight, kBias});
}

TEST_F(DistributedOptimizerApplyTest,
       WithoutMomentumCorrectionTheInnerOptimizerStepsOnTheMergedGradient) {
  const NamedParameters initial = MakeParameters(WeightAndBias());
  NamedParameters parameters = CloneParameters(initial);
  NamedParameters reference = CloneParameters(initial);
  auto sgd_options = [] {
    return torch::optim::SGDOptions(0.05).momentum(0.5);
  };
  torch::optim::SGD inner({parameters[0].second, parameters[1].second},
                          sgd_options());
  torch::optim::SGD reference_sgd({reference[0].second, reference[1].second},
                                  sgd_options());
  RecordingClient client;
  DistributedOptimizerOptions options = MomentumCorrectionOptions();
  options.compression.momentum_correction = false;
  options.inner_optimizer = &inner;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, options, &client));

  for (int64_t step = 0; step < 3; ++step) {
    SCOPED_TRACE(step);
    ENTROGRAD_ASSERT_OK(TrainSteps(*optimizer, parameters, step, step + 1));
    for (size_t l = 0; l < parameters.size(); ++l) {
      const std::optional<LayerContribution> sent =
          client.Sent({step, static_cast<uint32_t>(l)});
      ASSERT_TRUE(sent.has_value());
      const torch::Tensor merged =
          Densify(*sent).view(parameters[l].second.sizes());
      EXPECT_TRUE(BitwiseEqual(parameters[l].second.grad(), merged))
          << parameters[l].first << ": p.grad is not the merged update";
      reference[l].second.mutable_grad() = merged;
    }
    reference_sgd.step();
    for (size_t l = 0; l < parameters.size(); ++l) {
      EXPECT_TRUE(BitwiseEqual(parameters[l].second, reference[l].second))
          << parameters[l].first;
    }
  }
}

TEST_F(DistributedOptimizerApplyTest,
       StepClearsTheGradientsUnderMomentumCorrection) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, MomentumCorrectionOptions(),
                                   &client));
  BackwardWith(parameters, GradientsAt(parameters, 0));
  for (const auto& [name, parameter] : parameters) {
    ASSERT_TRUE(parameter.grad().defined()) << name;
  }
  ENTROGRAD_ASSERT_OK(optimizer->Step());
  for (const auto& [name, parameter] : parameters) {
    EXPECT_FALSE(parameter.grad().defined()) << name;
  }
}

TEST_F(DistributedOptimizerApplyTest,
       StepWaitsForEveryRoundOfItsStepMarksItAppliedAndAdvances) {
  NamedParameters parameters = MakeParameters(WeightAndBias());
  RecordingClient client;
  // Resumed at step 7, as from a checkpoint.
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<DistributedOptimizer> optimizer,
      DistributedOptimizer::Create(parameters, MomentumCorrectionOptions(),
                                   &client, /*first_step=*/7));
  EXPECT_EQ(optimizer->step(), 7);
  ENTROGRAD_ASSERT_OK(TrainSteps(*optimizer, parameters, 7, 8));
  EXPECT_THAT(client.send_order(),
              UnorderedElementsAre(Round{7, kWeight}, Round{7, kBias}));
  EXPECT_THAT(client.waits(), ElementsAre(Round{7, kWeight}, Round{7, kBias}));
  EXPECT_THAT(client.applied(), ElementsAre(7));
  EXPECT_EQ(optimizer->step(), 8);

  ENTROGRAD_ASSERT_OK(TrainSteps(*optimizer, parameters, 8, 9));
  EXPECT_THAT(client.waits(), ElementsAre(Round{7, kWeight}, Round{7, kBias},
                                          Round{8, kWeight}, Round{8, kBias}));
  EXPECT_THAT(client.applied(), ElementsAre(7, 8));
  EXPECT_EQ(optimizer->step(), 9);
}

}  // namespace
}  // namespace entrograd::testing
