// Whole compress (entropy + keep count + selection + residual update) of one
// float32 layer, side by side in the same run with what a user would write
// instead: torch::topk(x.abs(), k), std::nth_element on a copy, and memcpy of
// the layer (the memory-bandwidth limit).
//
// Arguments of every benchmark: {numel, density in parts per million}.
// Run: build/bench/compress_bench --benchmark_format=json, then
// bench/compress_report.py turns the JSON into docs/BENCHMARKS.md's table.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "benchmark/benchmark.h"
#include "entrograd/layer_compressor.h"
#include "gradient_data.h"
#include "torch/torch.h"

namespace entrograd::bench {
namespace {

int64_t KeepCount(const benchmark::State& state) {
  return std::max<int64_t>(
      1, std::llround(state.range(0) * (state.range(1) * 1e-6)));
}

void CompressWithPolicy(benchmark::State& state, KeepPolicy policy) {
  const int64_t n = state.range(0);
  const std::vector<float>& gradient = HeavyTailedGradient(n);
  CompressionOptions options;
  options.policy = policy;
  options.rho = state.range(1) * 1e-6;
  options.dense_below = 0;
  auto compressor = LayerCompressor::Create(n, options).value();
  CompressedLayer out;
  for (auto _ : state) {
    if (!compressor->Compress(gradient, 0, &out).ok()) {
      state.SkipWithError("compress failed");
      break;
    }
    benchmark::DoNotOptimize(out.indices.data());
  }
  state.counters["k"] = static_cast<double>(out.k);
  // Bytes the compress must read and write: u and G read, A written (one
  // fused pass), plus the sparse output (index and value). A memcpy of the
  // layer moves 8 bytes per element.
  const double bytes = 12.0 * n + 8.0 * out.k;
  state.counters["bytes_moved"] = bytes;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

void BM_EntrogradCompressTopK(benchmark::State& state) {
  CompressWithPolicy(state, KeepPolicy::kTopK);
}

void BM_EntrogradCompressEntropy(benchmark::State& state) {
  CompressWithPolicy(state, KeepPolicy::kEntropy);
}

void BM_TorchTopKAbs(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int64_t k = KeepCount(state);
  torch::Tensor x =
      torch::from_blob(const_cast<float*>(HeavyTailedGradient(n).data()), {n},
                       torch::kFloat32);
  for (auto _ : state) {
    auto [values, indices] = torch::topk(x.abs(), k);
    benchmark::DoNotOptimize(indices.data_ptr());
  }
  state.counters["k"] = static_cast<double>(k);
  state.counters["threads"] = at::get_num_threads();
}

void BM_StdNthElement(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int64_t k = KeepCount(state);
  const std::vector<float>& gradient = HeavyTailedGradient(n);
  std::vector<float> magnitudes(n);
  for (auto _ : state) {
    for (int64_t i = 0; i < n; ++i) magnitudes[i] = std::fabs(gradient[i]);
    std::nth_element(magnitudes.begin(), magnitudes.begin() + (k - 1),
                     magnitudes.end(), std::greater<float>());
    benchmark::DoNotOptimize(magnitudes.data());
  }
  state.counters["k"] = static_cast<double>(k);
}

void BM_Memcpy(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::vector<float>& gradient = HeavyTailedGradient(n);
  std::vector<float> copy(n);
  for (auto _ : state) {
    std::memcpy(copy.data(), gradient.data(), n * sizeof(float));
    benchmark::ClobberMemory();
  }
  state.counters["bytes_moved"] = 8.0 * n;
  state.SetBytesProcessed(state.iterations() * 8 * n);
}

void Sizes(benchmark::internal::Benchmark* bench) {
  for (int64_t n : {1'000'000ll, 25'000'000ll, 100'000'000ll}) {
    for (int64_t ppm : {1000, 10000}) bench->Args({n, ppm});
  }
  bench->ArgNames({"numel", "ppm"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_EntrogradCompressTopK)->Apply(Sizes);
BENCHMARK(BM_EntrogradCompressEntropy)->Apply(Sizes);
BENCHMARK(BM_TorchTopKAbs)->Apply(Sizes);
BENCHMARK(BM_StdNthElement)->Apply(Sizes);
BENCHMARK(BM_Memcpy)->Apply(Sizes);

}  // namespace
}  // namespace entrograd::bench

BENCHMARK_MAIN();
