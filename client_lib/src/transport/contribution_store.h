// The contributions a shard stream keeps for resends (aggregator.proto,
// "Nothing lost"): the last two steps of each layer, as the encoded
// WorkerMessage that was first sent, so a resend is byte-identical.
//
// Thread safety: not thread-safe; the owning ShardStream guards it.
// Ownership: messages are shared, immutable; a writer may still hold one
// after it was dropped here.
#ifndef ENTROGRAD_TRANSPORT_CONTRIBUTION_STORE_H_
#define ENTROGRAD_TRANSPORT_CONTRIBUTION_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "entrograd/v1/aggregator.pb.h"

namespace entrograd {

class ContributionStore {
 public:
  // Steps kept per layer: step t is needed until every rank applied it,
  // which is certain once this worker sends step t + 2.
  static constexpr int kStepsKeptPerLayer = 2;

  struct Kept {
    int64_t step = 0;
    uint32_t layer = 0;
    std::shared_ptr<const v1::WorkerMessage> message;
  };

  bool Contains(int64_t step, uint32_t layer) const;
  // Keeps `message` for (step, layer), replacing one kept for the same key,
  // and drops the layer's oldest steps beyond kStepsKeptPerLayer.
  void Keep(int64_t step, uint32_t layer,
            std::shared_ptr<const v1::WorkerMessage> message);
  // The message kept for (step, layer); null when none.
  std::shared_ptr<const v1::WorkerMessage> Find(int64_t step,
                                                uint32_t layer) const;
  // Every kept contribution with step > `above_step`, ordered by step, then
  // layer: the resend order after a reconnect.
  std::vector<Kept> Above(int64_t above_step) const;
  // Number of contributions kept.
  size_t size() const;

 private:
  // layer -> step -> message.
  std::map<uint32_t,
           std::map<int64_t, std::shared_ptr<const v1::WorkerMessage>>>
      by_layer_;
};

}  // namespace entrograd

#endif  // ENTROGRAD_TRANSPORT_CONTRIBUTION_STORE_H_
