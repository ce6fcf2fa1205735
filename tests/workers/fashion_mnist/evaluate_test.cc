#include "workers/fashion_mnist/evaluate.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdint>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "workers/fashion_mnist/cnn_model.h"

namespace entrograd::workers {
namespace {

using ::entrograd::testing::StatusIs;

// A model whose logits are the constant fc2 bias: every parameter is zero
// except fc2.bias[3] = kBias, so it predicts class 3 for any input.
constexpr float kBias = 2.0f;

FashionCnn ConstantClass3Model() {
  FashionCnn model = *MakeFashionCnn(1);
  torch::NoGradGuard no_grad;
  for (auto& item : model->named_parameters()) item.value().zero_();
  model->named_parameters()["fc2.bias"][3] = kBias;
  return model;
}

TEST(EvaluateTest, CountsAndLossOverPartialBatches) {
  FashionCnn model = ConstantClass3Model();
  const torch::Tensor images = torch::randn({10, 1, 28, 28});
  // Four samples of class 3, six of others.
  const torch::Tensor labels =
      torch::tensor({3, 0, 3, 1, 9, 3, 2, 3, 5, 8}, torch::kInt64);
  // Batches of 3: 3 + 3 + 3 + 1.
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EvalResult result,
                                 Evaluate(model, images, labels, 3));
  EXPECT_EQ(result.num_samples, 10);
  EXPECT_EQ(result.num_correct, 4);
  EXPECT_DOUBLE_EQ(result.accuracy, 0.4);
  // log-sum-exp of the logits is log(9 + e^kBias); class 3's loss subtracts
  // kBias from it.
  const double log_sum_exp = std::log(9.0 + std::exp(double{kBias}));
  EXPECT_NEAR(result.mean_loss, log_sum_exp - 0.4 * kBias, 1e-5);
}

TEST(EvaluateTest, RestoresTrainingModeAndTracksNoGradients) {
  FashionCnn model = *MakeFashionCnn(1);
  const torch::Tensor images = torch::randn({4, 1, 28, 28});
  const torch::Tensor labels = torch::zeros({4}, torch::kInt64);

  model->train();
  ENTROGRAD_ASSERT_OK(Evaluate(model, images, labels));
  EXPECT_TRUE(model->is_training());

  model->eval();
  ENTROGRAD_ASSERT_OK(Evaluate(model, images, labels));
  EXPECT_FALSE(model->is_training());

  for (const torch::Tensor& parameter : model->parameters()) {
    EXPECT_FALSE(parameter.grad().defined());
  }
}

TEST(EvaluateTest, RestoresTrainingModeOnLibTorchError) {
  FashionCnn model = *MakeFashionCnn(1);
  model->train();
  // Passes the shape checks, but label 10 is outside the 10 classes, so
  // cross_entropy throws inside the loop.
  const torch::Tensor images = torch::randn({2, 1, 28, 28});
  const torch::Tensor labels = torch::tensor({1, 10}, torch::kInt64);
  EXPECT_THAT(Evaluate(model, images, labels),
              StatusIs(absl::StatusCode::kInternal, "LibTorch"));
  EXPECT_TRUE(model->is_training());
}

TEST(EvaluateTest, IsRepeatable) {
  FashionCnn model = *MakeFashionCnn(2);
  const torch::Tensor images = torch::randn({50, 1, 28, 28});
  const torch::Tensor labels = torch::randint(0, 10, {50}, torch::kInt64);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EvalResult a,
                                 Evaluate(model, images, labels, 16));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(EvalResult b,
                                 Evaluate(model, images, labels, 16));
  EXPECT_EQ(a.num_correct, b.num_correct);
  EXPECT_EQ(a.mean_loss, b.mean_loss);
}

TEST(EvaluateTest, RejectsBadInputs) {
  FashionCnn model = *MakeFashionCnn(1);
  const torch::Tensor images = torch::randn({4, 1, 28, 28});
  const torch::Tensor labels = torch::zeros({4}, torch::kInt64);
  EXPECT_THAT(Evaluate(model, images, labels, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, "batch_size"));
  EXPECT_THAT(Evaluate(model, torch::randn({4, 28, 28}), labels),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "images: expected float32 [N, 1, 28, 28]"));
  EXPECT_THAT(Evaluate(model, images.to(torch::kFloat64), labels),
              StatusIs(absl::StatusCode::kInvalidArgument, "images"));
  EXPECT_THAT(Evaluate(model, images, labels.to(torch::kInt32)),
              StatusIs(absl::StatusCode::kInvalidArgument, "labels"));
  EXPECT_THAT(Evaluate(model, images, torch::zeros({3}, torch::kInt64)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "images has 4 samples, labels 3"));
  EXPECT_THAT(Evaluate(model, torch::randn({0, 1, 28, 28}),
                       torch::zeros({0}, torch::kInt64)),
              StatusIs(absl::StatusCode::kInvalidArgument, "no samples"));
  EXPECT_THAT(Evaluate(model, torch::Tensor(), labels),
              StatusIs(absl::StatusCode::kInvalidArgument, "undefined"));
}

}  // namespace
}  // namespace entrograd::workers
