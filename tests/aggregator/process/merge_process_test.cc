// The merged value semantics through the real binary, with four ranks so
// that the summation order is visible in the bits: values of very different
// magnitudes, ranks contributing in reverse order, one rank sending dense,
// and an index carried only as -0.0.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "aggregator/process/aggregator_process.h"
#include "aggregator/process/process_test_util.h"
#include "aggregator/support/test_worker.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

constexpr uint32_t kRanks = 4;
constexpr uint64_t kNumel = 3000;

// Fixes index `i` of `v` to `value` (inserting it if absent).
void Put(SparseVector& v, uint32_t i, float value) {
  auto it = std::lower_bound(v.indices.begin(), v.indices.end(), i);
  const size_t at = static_cast<size_t>(it - v.indices.begin());
  if (it != v.indices.end() && *it == i) {
    v.values[at] = value;
  } else {
    v.indices.insert(it, i);
    v.values.insert(v.values.begin() + static_cast<std::ptrdiff_t>(at), value);
  }
}

TEST(MergeProcessTest, FourRanksMergeInRankOrderRegardlessOfArrival) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(std::unique_ptr<AggregatorProcess> server,
                                 AggregatorProcess::Start({}));
  auto channel = LoopbackChannel(server->port());

  std::vector<SparseVector> ranks;
  for (uint32_t rank = 0; rank < kRanks; ++rank) {
    ranks.push_back(RandomSparse(kNumel, 400, 100 + rank));
  }
  // Index 7: 1e8 + 1 - 1e8 + 1 in rank order gives 1 (the first +1 is
  // lost), any other order something else.
  const float order_values[kRanks] = {1e8f, 1.0f, -1e8f, 1.0f};
  for (uint32_t rank = 0; rank < kRanks; ++rank) Put(ranks[rank], 7, order_values[rank]);
  // Index 11: only rank 2 carries it, as -0.0: the merge keeps -0.0.
  Put(ranks[2], 11, -0.0f);
  for (uint32_t rank : {0u, 1u, 3u}) {
    auto it = std::lower_bound(ranks[rank].indices.begin(), ranks[rank].indices.end(), 11u);
    if (it != ranks[rank].indices.end() && *it == 11u) {
      const auto at = it - ranks[rank].indices.begin();
      ranks[rank].indices.erase(it);
      ranks[rank].values.erase(ranks[rank].values.begin() + at);
    }
  }
  const SparseVector expected = ReferenceMerge(ranks);
  {
    // Guard the reference itself: rank order matters at index 7.
    auto it = std::lower_bound(expected.indices.begin(), expected.indices.end(), 7u);
    ASSERT_TRUE(it != expected.indices.end() && *it == 7u);
    EXPECT_EQ(expected.values[static_cast<size_t>(it - expected.indices.begin())],
              1.0f / kRanks);
  }

  std::vector<std::unique_ptr<TestWorker>> workers;
  for (uint32_t rank = 0; rank < kRanks; ++rank) {
    workers.push_back(
        std::make_unique<TestWorker>(channel, std::nullopt, absl::Seconds(20)));
    JoinSpec spec;
    spec.job_id = "merge-job";
    spec.rank = rank;
    spec.world_size = kRanks;
    spec.layers = {{"w", kNumel}};
    ASSERT_THAT(workers[rank]->Join(MakeJoin(spec)), IsOk());
  }
  // Reverse arrival order; rank 1 sends its update dense.
  for (int rank = kRanks - 1; rank >= 0; --rank) {
    EncodedPayload payload;
    if (rank == 1) {
      std::vector<float> dense(kNumel, 0.0f);
      for (size_t j = 0; j < ranks[1].indices.size(); ++j) {
        dense[ranks[1].indices[j]] = ranks[1].values[j];
      }
      EncodeOptions options;
      options.index_encoding = IndexEncoding::kDense;
      absl::StatusOr<EncodedPayload> encoded = EncodeDense(dense, options);
      ASSERT_THAT(encoded, IsOk());
      payload = *std::move(encoded);
    } else {
      payload = EncodeOrDie(ranks[rank]);
    }
    ASSERT_TRUE(workers[rank]->SendUpdate(MakeUpdate(0, 0, payload)));
    // Let each contribution land before the next, so arrival order is
    // really the reverse of rank order.
    absl::SleepFor(absl::Milliseconds(20));
  }
  for (uint32_t rank = 0; rank < kRanks; ++rank) {
    absl::StatusOr<v1::AggregatorMessage> message = workers[rank]->Read();
    ASSERT_TRUE(message.ok() && message->has_merged_layer())
        << "rank " << rank << ": " << Describe(message);
    EXPECT_EQ(message->merged_layer().contributors(), kRanks);
    EXPECT_EQ(CompareMerged(message->merged_layer(), expected), "")
        << "rank " << rank;
  }
  for (auto& worker : workers) EXPECT_THAT(worker->Finish(), IsOk());
}

}  // namespace
}  // namespace entrograd::testing
