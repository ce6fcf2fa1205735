// Gradient-like benchmark data: heavy-tailed (Student-t with 2 degrees of
// freedom, scaled to 1e-3), the shape real layer gradients have. Generated
// once per size and cached, deterministically (fixed seed).
#ifndef ENTROGRAD_BENCH_GRADIENT_DATA_H_
#define ENTROGRAD_BENCH_GRADIENT_DATA_H_

#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

namespace entrograd::bench {

inline const std::vector<float>& HeavyTailedGradient(int64_t n) {
  static auto* cache = new std::map<int64_t, std::vector<float>>();
  auto it = cache->find(n);
  if (it != cache->end()) return it->second;
  std::vector<float> data(n);
  // splitmix64 + inverse CDF of Student-t(2): t = (2u - 1) / sqrt(2u(1 - u)).
  uint64_t state = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(n);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const double u = (static_cast<double>(z >> 11) + 0.5) * 0x1.0p-53;
    const double t = (2.0 * u - 1.0) / std::sqrt(2.0 * u * (1.0 - u));
    data[i] = static_cast<float>(1e-3 * t);
  }
  return cache->emplace(n, std::move(data)).first->second;
}

}  // namespace entrograd::bench

#endif  // ENTROGRAD_BENCH_GRADIENT_DATA_H_
