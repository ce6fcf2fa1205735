#include "workers/fashion_mnist/cnn_model.h"

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "entrograd/compression_options.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::workers {
namespace {

using ::testing::ElementsAre;

// True when every parameter of `a` equals the one of `b` bit for bit (so
// -0.0 vs 0.0 or differing NaN payloads count as differences).
bool BitwiseEqualParameters(FashionCnn& a, FashionCnn& b) {
  const std::vector<torch::Tensor> pa = a->parameters();
  const std::vector<torch::Tensor> pb = b->parameters();
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i) {
    if (pa[i].sizes() != pb[i].sizes()) return false;
    const torch::Tensor ca = pa[i].contiguous();
    const torch::Tensor cb = pb[i].contiguous();
    if (std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) != 0) {
      return false;
    }
  }
  return true;
}

TEST(FashionCnnTest, OutputIsLogitsPerSample) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FashionCnn model, MakeFashionCnn(1));
  for (int64_t batch : {1, 7, 64}) {
    const torch::Tensor logits =
        model->forward(torch::randn({batch, 1, 28, 28}));
    EXPECT_EQ(logits.sizes(), torch::IntArrayRef({batch, 10}));
    EXPECT_EQ(logits.scalar_type(), torch::kFloat32);
    EXPECT_TRUE(torch::isfinite(logits).all().item<bool>());
  }
}

TEST(FashionCnnTest, ParametersInStableOrder) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FashionCnn model, MakeFashionCnn(1));
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  int64_t total = 0;
  for (const auto& item : model->named_parameters()) {
    names.push_back(item.key());
    shapes.push_back(item.value().sizes().vec());
    total += item.value().numel();
  }
  EXPECT_THAT(names, ElementsAre("conv1.weight", "conv1.bias", "conv2.weight",
                                 "conv2.bias", "fc1.weight", "fc1.bias",
                                 "fc2.weight", "fc2.bias"));
  EXPECT_THAT(shapes, ElementsAre(ElementsAre(32, 1, 5, 5), ElementsAre(32),
                                  ElementsAre(64, 32, 5, 5), ElementsAre(64),
                                  ElementsAre(128, 3136), ElementsAre(128),
                                  ElementsAre(10, 128), ElementsAre(10)));
  EXPECT_EQ(total, 454922);
}

TEST(FashionCnnTest, WideModelHasTheSameTrunkAndAWideHead) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FashionCnn model,
                                 MakeFashionCnn(1, ModelKind::kWide));
  std::vector<std::vector<int64_t>> shapes;
  int64_t total = 0;
  for (const auto& item : model->named_parameters()) {
    shapes.push_back(item.value().sizes().vec());
    total += item.value().numel();
  }
  EXPECT_THAT(shapes, ElementsAre(ElementsAre(32, 1, 5, 5), ElementsAre(32),
                                  ElementsAre(64, 32, 5, 5), ElementsAre(64),
                                  ElementsAre(8192, 3136), ElementsAre(8192),
                                  ElementsAre(10, 8192), ElementsAre(10)));
  EXPECT_EQ(total, 25832330) << "the issue asks for >= 25M parameters";
  EXPECT_EQ(model->forward(torch::randn({3, 1, 28, 28})).sizes(),
            torch::IntArrayRef({3, 10}));
}

TEST(FashionCnnTest, VggHasTenLayersToCompress) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FashionCnn model,
                                 MakeFashionCnn(1, ModelKind::kVgg));
  std::vector<std::string> names;
  int64_t total = 0;
  int compressed = 0;
  for (const auto& item : model->named_parameters()) {
    names.push_back(item.key());
    total += item.value().numel();
    // The worker's default --dense_below (the library's) sends smaller
    // layers whole.
    if (item.value().numel() >= CompressionOptions{}.dense_below) {
      ++compressed;
    }
  }
  EXPECT_THAT(names,
              ElementsAre("conv1_1.weight", "conv1_1.bias", "conv1_2.weight",
                          "conv1_2.bias", "conv1_3.weight", "conv1_3.bias",
                          "conv2_1.weight", "conv2_1.bias", "conv2_2.weight",
                          "conv2_2.bias", "conv2_3.weight", "conv2_3.bias",
                          "conv3_1.weight", "conv3_1.bias", "conv3_2.weight",
                          "conv3_2.bias", "conv3_3.weight", "conv3_3.bias",
                          "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"));
  EXPECT_EQ(total, 777930);
  EXPECT_EQ(compressed, 10) << "issue 11 asks for at least 10";
  EXPECT_EQ(model->forward(torch::randn({3, 1, 28, 28})).sizes(),
            torch::IntArrayRef({3, 10}));
}

// The fan-in of weight `t`: its entries per output unit (every dimension but
// the first), the number an init scales its draws by.
double FanIn(const torch::Tensor& t) { return t.numel() / t.size(0); }

// vgg's 10 ReLU layers need He init (std sqrt(2/fan_in), zero bias) to
// train at all; cnn keeps LibTorch's default (std sqrt(1/(3 fan_in))), so
// the figures measured on it stay comparable.
TEST(FashionCnnTest, VggUsesHeInitAndCnnKeepsTheDefault) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FashionCnn vgg,
                                 MakeFashionCnn(1, ModelKind::kVgg));
  for (const auto& item : vgg->named_parameters()) {
    const torch::Tensor& value = item.value();
    if (item.key().rfind("fc2.", 0) == 0) continue;  // the default init
    if (value.dim() == 1) {
      EXPECT_EQ(value.abs().max().item<float>(), 0.0f) << item.key();
      continue;
    }
    const double expected = std::sqrt(2.0 / FanIn(value));
    EXPECT_NEAR(value.std().item<double>(), expected, 0.15 * expected)
        << item.key();
  }
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FashionCnn cnn, MakeFashionCnn(1));
  for (const auto& item : cnn->named_parameters()) {
    if (item.value().dim() == 1) continue;
    const double expected = std::sqrt(1.0 / (3.0 * FanIn(item.value())));
    EXPECT_NEAR(item.value().std().item<double>(), expected, 0.15 * expected)
        << item.key();
  }
}

TEST(FashionCnnTest, ModelKindNamesRoundTripAndUnknownNamesAreRefused) {
  for (ModelKind kind : {ModelKind::kCnn, ModelKind::kWide, ModelKind::kVgg}) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(ModelKind parsed,
                                   ParseModelKind(ModelKindName(kind)));
    EXPECT_EQ(parsed, kind);
  }
  absl::StatusOr<ModelKind> bad = ParseModelKind("resnet");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), ::testing::HasSubstr("\"resnet\""));
}

TEST(FashionCnnTest, SameSeedGivesBitwiseIdenticalParameters) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FashionCnn a, MakeFashionCnn(123));
  // Using the global generator in between must not matter.
  torch::rand({1000});
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FashionCnn b, MakeFashionCnn(123));
  EXPECT_TRUE(BitwiseEqualParameters(a, b));
}

TEST(FashionCnnTest, DifferentSeedsGiveDifferentParameters) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FashionCnn a, MakeFashionCnn(123));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FashionCnn b, MakeFashionCnn(124));
  EXPECT_FALSE(BitwiseEqualParameters(a, b));
  // Every tensor differs, not just one.
  const std::vector<torch::Tensor> pa = a->parameters();
  const std::vector<torch::Tensor> pb = b->parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_FALSE(torch::equal(pa[i], pb[i])) << "parameter " << i;
  }
}

TEST(FashionCnnTest, WrongInputShapeThrowsC10Error) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FashionCnn model, MakeFashionCnn(1));
  EXPECT_THROW(model->forward(torch::randn({2, 3, 28, 28})), c10::Error);
}

}  // namespace
}  // namespace entrograd::workers
