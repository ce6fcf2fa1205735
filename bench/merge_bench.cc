// Merge of the W ranks' sparse contributions of one round (ALGORITHM.md step
// 6), side by side in one run: entrograd's SparseMerger (its choice, and each
// strategy forced), a std::map merge, and a dense scatter-add into a
// zeroed numel buffer followed by a scan for nonzeros. items_per_second
// counts input nonzeros. Table: bench/merge_report.py.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "aggregator/merge/sparse_merge.h"
#include "benchmark/benchmark.h"

namespace entrograd::aggregator {
namespace {

constexpr uint64_t kNumel = 25'000'000;

struct BenchRound {
  std::vector<std::vector<uint32_t>> indices;
  std::vector<std::vector<float>> values;
  std::vector<RankContribution> views;
  uint64_t total_nonzeros = 0;
};

// Per rank: `ppm` parts per million of kNumel, distinct random indices
// (ascending) and heavy-tailed values (normal * log-normal). Seeded, so every
// benchmark of a (W, ppm) sees the same round.
const BenchRound& RoundFor(int world_size, int ppm) {
  static std::map<std::pair<int, int>, BenchRound>* cache =
      new std::map<std::pair<int, int>, BenchRound>();
  auto [it, inserted] = cache->try_emplace({world_size, ppm});
  BenchRound& round = it->second;
  if (!inserted) return round;
  std::mt19937_64 rng(1234567u + world_size * 1000003u + ppm);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const uint64_t k = kNumel * ppm / 1'000'000;
  for (int r = 0; r < world_size; ++r) {
    std::vector<uint32_t> indices;
    while (indices.size() < k) {
      while (indices.size() < k) {
        indices.push_back(static_cast<uint32_t>(rng() % kNumel));
      }
      std::sort(indices.begin(), indices.end());
      indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
    }
    std::vector<float> values(k);
    for (float& value : values) {
      value = normal(rng) * std::exp(2.0f * normal(rng));
    }
    round.total_nonzeros += k;
    round.indices.push_back(std::move(indices));
    round.values.push_back(std::move(values));
  }
  for (int r = 0; r < world_size; ++r) {
    round.views.push_back(
        RankContribution::Sparse(round.indices[r], round.values[r]));
  }
  return round;
}

void Finish(benchmark::State& state, const BenchRound& round,
            size_t merged_count) {
  state.SetItemsProcessed(
      static_cast<int64_t>(state.iterations() * round.total_nonzeros));
  state.counters["input_nonzeros"] = static_cast<double>(round.total_nonzeros);
  state.counters["merged_nonzeros"] = static_cast<double>(merged_count);
}

// `forced`: the strategy to force, or nullptr for ChooseMergeStrategy's.
void RunSparseMerger(benchmark::State& state, const MergeStrategy* forced) {
  const int world_size = static_cast<int>(state.range(0));
  const BenchRound& round =
      RoundFor(world_size, static_cast<int>(state.range(1)));
  SparseMerger merger;
  MergedUpdate merged;
  for (auto _ : state) {
    const absl::Status status =
        forced != nullptr
            ? merger.MergeWith(*forced, kNumel, world_size, round.views,
                               &merged)
            : merger.Merge(kNumel, world_size, round.views, &merged);
    if (!status.ok()) state.SkipWithError(status.ToString().c_str());
    benchmark::DoNotOptimize(merged.values.data());
  }
  Finish(state, round, merged.indices.size());
}

void BM_EntrogradMerge(benchmark::State& state) {
  RunSparseMerger(state, nullptr);
}
void BM_EntrogradBlockedMerge(benchmark::State& state) {
  static constexpr MergeStrategy kForced = MergeStrategy::kBlockedAccumulate;
  RunSparseMerger(state, &kForced);
}
void BM_EntrogradKWayMerge(benchmark::State& state) {
  static constexpr MergeStrategy kForced = MergeStrategy::kKWayMerge;
  RunSparseMerger(state, &kForced);
}
void BM_EntrogradSmallBlockMerge(benchmark::State& state) {
  static constexpr MergeStrategy kForced = MergeStrategy::kSmallBlockAccumulate;
  RunSparseMerger(state, &kForced);
}

// Baseline: an ordered map; first contribution assigned, later ones added,
// ranks in order.
void BM_StdMapMerge(benchmark::State& state) {
  const int world_size = static_cast<int>(state.range(0));
  const BenchRound& round =
      RoundFor(world_size, static_cast<int>(state.range(1)));
  std::vector<uint32_t> out_indices;
  std::vector<float> out_values;
  for (auto _ : state) {
    std::map<uint32_t, float> sums;
    for (int r = 0; r < world_size; ++r) {
      const auto& indices = round.indices[r];
      const auto& values = round.values[r];
      for (size_t j = 0; j < indices.size(); ++j) {
        auto [it, inserted] = sums.try_emplace(indices[j], values[j]);
        if (!inserted) it->second += values[j];
      }
    }
    out_indices.clear();
    out_values.clear();
    for (const auto& [index, sum] : sums) {
      out_indices.push_back(index);
      out_values.push_back(sum / static_cast<float>(world_size));
    }
    benchmark::DoNotOptimize(out_values.data());
  }
  Finish(state, round, out_indices.size());
}

// Baseline: zero a numel buffer, scatter-add every rank into it, emit the
// elements that are not +0.0 (which, unlike the merge, drops indices whose
// sum cancelled to +0.0).
void BM_DenseScatterMerge(benchmark::State& state) {
  const int world_size = static_cast<int>(state.range(0));
  const BenchRound& round =
      RoundFor(world_size, static_cast<int>(state.range(1)));
  std::vector<float> dense(kNumel);
  std::vector<uint32_t> out_indices;
  std::vector<float> out_values;
  for (auto _ : state) {
    std::fill(dense.begin(), dense.end(), 0.0f);
    for (int r = 0; r < world_size; ++r) {
      const auto& indices = round.indices[r];
      const auto& values = round.values[r];
      for (size_t j = 0; j < indices.size(); ++j) {
        dense[indices[j]] += values[j];
      }
    }
    out_indices.clear();
    out_values.clear();
    for (uint32_t i = 0; i < kNumel; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &dense[i], sizeof(bits));
      if (bits == 0) continue;
      out_indices.push_back(i);
      out_values.push_back(dense[i] / static_cast<float>(world_size));
    }
    benchmark::DoNotOptimize(out_values.data());
  }
  Finish(state, round, out_indices.size());
}

void MergeArgs(benchmark::internal::Benchmark* bench) {
  bench->ArgNames({"W", "ppm"})->Unit(benchmark::kMillisecond);
  for (int world_size : {4, 16}) {
    for (int ppm : {1000, 10000}) bench->Args({world_size, ppm});
  }
}

BENCHMARK(BM_EntrogradMerge)->Apply(MergeArgs);
BENCHMARK(BM_EntrogradBlockedMerge)->Apply(MergeArgs);
BENCHMARK(BM_EntrogradKWayMerge)->Apply(MergeArgs);
BENCHMARK(BM_EntrogradSmallBlockMerge)->Apply(MergeArgs);
BENCHMARK(BM_StdMapMerge)->Apply(MergeArgs);
BENCHMARK(BM_DenseScatterMerge)->Apply(MergeArgs);

}  // namespace
}  // namespace entrograd::aggregator

BENCHMARK_MAIN();
