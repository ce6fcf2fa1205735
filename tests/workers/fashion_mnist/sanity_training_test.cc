// End-to-end check of the data, sampler, model and evaluation together: a
// short single-rank SGD run must clearly learn. Catches a wrong
// normalisation, label order, sampler slice or layer wiring, which unit
// tests of the parts can each miss.

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "workers/fashion_mnist/cnn_model.h"
#include "workers/fashion_mnist/evaluate.h"
#include "workers/fashion_mnist/fashion_mnist.h"
#include "workers/fashion_mnist/shard_sampler.h"

namespace entrograd::workers {
namespace {

constexpr int kSteps = 200;
constexpr int64_t kBatchSize = 64;
constexpr double kLearningRate = 0.05;
constexpr int64_t kEvalSamples = 2000;
constexpr double kMinAccuracy = 0.70;

TEST(SanityTrainingTest, TwoHundredSgdStepsLearn) {
  if (!std::filesystem::exists(std::string(kDefaultFashionMnistDir) + "/" +
                               kTrainImagesFile + ".gz")) {
    GTEST_SKIP() << kDefaultFashionMnistDir
                 << " is absent: install Debian's dataset-fashion-mnist "
                    "(scripts/setup.sh does)";
  }
  // One thread: the test shares the machine with the rest of ctest, and
  // a fixed thread count keeps its run time predictable.
  torch::set_num_threads(1);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FashionMnist data,
                                 LoadFashionMnist(kDefaultFashionMnistDir));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(FashionCnn model, MakeFashionCnn(1));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      ShardSampler sampler,
      ShardSampler::Create(data.train.images.size(0), 1, kBatchSize, 1));
  torch::optim::SGD optimizer(model->parameters(),
                              torch::optim::SGDOptions(kLearningRate));

  const auto start = std::chrono::steady_clock::now();
  model->train();
  double last_loss = 0.0;
  for (int step = 0; step < kSteps; ++step) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::vector<int64_t> indices,
                                   sampler.Batch(0, step, 0));
    const torch::Tensor index = torch::tensor(indices, torch::kInt64);
    optimizer.zero_grad();
    const torch::Tensor loss = torch::nn::functional::cross_entropy(
        model->forward(data.train.images.index_select(0, index)),
        data.train.labels.index_select(0, index));
    loss.backward();
    optimizer.step();
    last_loss = loss.item<double>();
  }
  const double train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();

  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      EvalResult result,
      Evaluate(model, data.test.images.slice(0, 0, kEvalSamples),
               data.test.labels.slice(0, 0, kEvalSamples)));
  const double total_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::cout << "sanity training: " << kSteps << " steps in " << train_seconds
            << " s (with eval " << total_seconds << " s), last batch loss "
            << last_loss << ", test accuracy " << result.accuracy
            << " on the first " << kEvalSamples << " images, mean loss "
            << result.mean_loss << "\n";
  RecordProperty("accuracy", std::to_string(result.accuracy));
  RecordProperty("train_seconds", std::to_string(train_seconds));
  EXPECT_EQ(result.num_samples, kEvalSamples);
  EXPECT_GT(result.accuracy, kMinAccuracy);
}

}  // namespace
}  // namespace entrograd::workers
