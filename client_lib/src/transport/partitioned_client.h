// A Client that cuts large layers into parts on the wire (LayerPartition)
// in front of a Client that speaks the parts' table. The caller sees the
// model's layers: SendLayer splits a contribution into its parts and sends
// each; WaitMerged waits for every part's merged update and puts the layer
// back together. The parts go to the shards the shard map picks for them,
// so one large layer spreads its bytes and its merge work over the shards.
//
// Errors are the inner client's, with the layer and part named. If the
// inner client refuses a later part after it accepted earlier ones (e.g.
// RESOURCE_EXHAUSTED for one part's size), the parts sent stay sent and the
// round cannot complete: it fails for every rank at the aggregator's round
// timeout, loudly, as a missing contribution does.
//
// Thread safety: every method is thread-safe, as Client's. Two threads
// waiting for the same (step, layer) at once get what the inner client
// gives for a repeated wait (FAILED_PRECONDITION for one of them).
#ifndef ENTROGRAD_CLIENT_LIB_SRC_TRANSPORT_PARTITIONED_CLIENT_H_
#define ENTROGRAD_CLIENT_LIB_SRC_TRANSPORT_PARTITIONED_CLIENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "entrograd/client.h"
#include "transport/layer_partition.h"

namespace entrograd {

class PartitionedClient final : public Client {
 public:
  // Takes ownership of `inner`, which must have joined with
  // partition.wire_layers().
  PartitionedClient(std::unique_ptr<Client> inner, LayerPartition partition);
  ~PartitionedClient() override;

  absl::Status SendLayer(LayerContribution contribution) override;
  absl::StatusOr<MergedLayerUpdate> WaitMerged(int64_t step,
                                               uint32_t layer) override;
  void MarkApplied(int64_t step) override;
  ClientTraffic traffic() const override;
  ValueType value_type() const override { return inner_->value_type(); }
  void Close() override;

 private:
  using RoundKey = std::pair<int64_t, uint32_t>;  // (step, model layer)

  const std::unique_ptr<Client> inner_;
  const LayerPartition partition_;
  absl::Mutex mu_;
  // Parts already received of layers whose wait ended with
  // DEADLINE_EXCEEDED: a later wait goes on from there.
  std::map<RoundKey, std::vector<std::optional<MergedLayerUpdate>>> partial_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace entrograd

#endif  // ENTROGRAD_CLIENT_LIB_SRC_TRANSPORT_PARTITIONED_CLIENT_H_
