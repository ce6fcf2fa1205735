// Naive reference implementations the fast paths are compared against:
// obviously correct, slow (a full sort).
#ifndef ENTROGRAD_TESTS_CLIENT_LIB_CORE_REFERENCE_H_
#define ENTROGRAD_TESTS_CLIENT_LIB_CORE_REFERENCE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

namespace entrograd::reference {

// ALGORITHM.md 5.5 literally: sort by |a| descending, index ascending; take
// k; return the indices ascending.
inline std::vector<uint32_t> SelectBySort(const std::vector<float>& values,
                                          int64_t k) {
  std::vector<uint32_t> order(values.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const float mag_a = std::fabs(values[a]);
    const float mag_b = std::fabs(values[b]);
    return mag_a != mag_b ? mag_a > mag_b : a < b;
  });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

// Inputs the fast paths must get right: heavy tails, ties, zeros, denormals.
enum class Shape { kGaussian, kHeavyTailed, kAllEqual, kFewDistinct, kMostlyZero,
                   kDenormal, kOneHuge };

inline std::vector<float> MakeValues(Shape shape, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> values(n);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::cauchy_distribution<float> cauchy(0.0f, 1e-4f);
  for (int64_t i = 0; i < n; ++i) {
    switch (shape) {
      case Shape::kGaussian: values[i] = normal(rng); break;
      case Shape::kHeavyTailed: {
        float x = cauchy(rng);
        if (!std::isfinite(x) || std::fabs(x) > 1e3f) x = 1e3f;
        values[i] = x;
        break;
      }
      case Shape::kAllEqual: values[i] = (i % 2) ? 0.5f : -0.5f; break;
      case Shape::kFewDistinct: values[i] = static_cast<float>(rng() % 4) - 1.5f; break;
      case Shape::kMostlyZero: values[i] = (rng() % 50 == 0) ? normal(rng) : 0.0f; break;
      case Shape::kDenormal:
        values[i] = std::ldexp(static_cast<float>(rng() % 1000), -140 - static_cast<int>(rng() % 9));
        if (rng() % 2) values[i] = -values[i];
        break;
      case Shape::kOneHuge: values[i] = (i == n / 3) ? 3e38f : normal(rng) * 1e-6f; break;
    }
  }
  return values;
}

inline constexpr Shape kAllShapes[] = {
    Shape::kGaussian, Shape::kHeavyTailed, Shape::kAllEqual, Shape::kFewDistinct,
    Shape::kMostlyZero, Shape::kDenormal, Shape::kOneHuge};

}  // namespace entrograd::reference

#endif  // ENTROGRAD_TESTS_CLIENT_LIB_CORE_REFERENCE_H_
