#include "bench/aggregator_load/sparse_payloads.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"

namespace entrograd::bench {

namespace {

// conv1 (32x1x5x5) + bias, conv2 (64x32x5x5) + bias, fc1 (64x128) + bias,
// fc2 (128x10) + bias: the workers' CNN with a narrow fc1, so 100 layers
// stay about 0.9 M parameters a rank (the loopback, not the model, is what
// a 2-core machine can afford).
constexpr uint64_t kShapes[] = {800, 32, 51200, 64, 8192, 128, 1280, 10};

uint64_t Mix(uint64_t seed, uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  // splitmix64 over the fields: distinct tuples get unrelated streams.
  uint64_t x = seed;
  for (uint64_t v : {a, b, c, d}) {
    x += 0x9e3779b97f4a7c15ULL + v;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
  }
  return x;
}

// Heavy-tailed like a gradient's largest entries: a normal's sign times a
// log-normal magnitude.
float GradientValue(std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const float magnitude = std::exp(normal(rng)) * 1e-3f;
  return normal(rng) < 0.0f ? -magnitude : magnitude;
}

void AppendIndices(uint64_t numel, uint64_t count, std::mt19937_64& rng,
                   std::vector<uint32_t>& out) {
  std::uniform_int_distribution<uint64_t> pick(0, numel - 1);
  for (uint64_t i = 0; i < count; ++i) {
    out.push_back(static_cast<uint32_t>(pick(rng)));
  }
}

}  // namespace

std::vector<LayerSpecification> LayerSizes(int count) {
  std::vector<LayerSpecification> layers;
  layers.reserve(count);
  constexpr int kShapeCount = sizeof(kShapes) / sizeof(kShapes[0]);
  for (int l = 0; l < count; ++l) {
    layers.push_back(
        {absl::StrCat("block", l / kShapeCount, ".param", l % kShapeCount),
         kShapes[l % kShapeCount]});
  }
  return layers;
}

LayerContribution MakeLoadContribution(const LoadOptions& options, int job,
                                       int rank, uint32_t layer,
                                       uint64_t numel, int variant) {
  LayerContribution contribution;
  contribution.layer = layer;
  contribution.numel = numel;
  contribution.entropy = 1.0;
  std::mt19937_64 own(Mix(options.seed, job, rank, layer, variant));
  if (numel < options.dense_below) {
    contribution.dense = true;
    contribution.values.resize(numel);
    for (float& value : contribution.values) value = GradientValue(own);
    contribution.keep_ratio = 1.0;
    return contribution;
  }
  const uint64_t keep = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::ceil(options.density * numel)));
  const uint64_t shared =
      static_cast<uint64_t>(std::llround(options.shared_fraction * keep));
  // The job's shared coordinates: the same seed for every rank.
  std::mt19937_64 common(Mix(options.seed, job, ~uint64_t{0}, layer, variant));
  std::vector<uint32_t>& indices = contribution.indices;
  indices.reserve(keep);
  AppendIndices(numel, shared, common, indices);
  AppendIndices(numel, keep - shared, own, indices);
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  contribution.values.resize(indices.size());
  for (float& value : contribution.values) value = GradientValue(own);
  contribution.keep_ratio =
      static_cast<double>(indices.size()) / static_cast<double>(numel);
  return contribution;
}

}  // namespace entrograd::bench
