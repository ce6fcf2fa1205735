// The implementation of entrograd::Client (client.h): validates and encodes
// contributions, routes each layer to the ShardStream of the shard the
// ShardMap picks, and waits for merged layers in the MergedInbox.
//
// Thread safety: as client.h: every method is thread-safe.
#ifndef ENTROGRAD_TRANSPORT_CLIENT_IMPL_H_
#define ENTROGRAD_TRANSPORT_CLIENT_IMPL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "entrograd/client.h"
#include "entrograd/shard_map.h"
#include "transport/client_state.h"
#include "transport/shard_stream.h"

namespace entrograd {

class ClientImpl final : public Client {
 public:
  // Client::Connect.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(
      ClientOptions options, std::vector<LayerSpecification> layers,
      uint64_t initial_params_hash, absl::Duration join_timeout);

  ~ClientImpl() override;

  absl::Status SendLayer(LayerContribution contribution) override;
  absl::StatusOr<MergedLayerUpdate> WaitMerged(int64_t step,
                                               uint32_t layer) override;
  void MarkApplied(int64_t step) override;
  ClientTraffic traffic() const override;
  ValueType value_type() const override { return options_.value_type; }
  void Close() override;

 private:
  ClientImpl(ClientOptions options, ShardMap shard_map,
             std::vector<LayerSpecification> layers);

  // The checks of SendLayer that need no encoding.
  absl::Status CheckContribution(const LayerContribution& contribution) const;

  const ClientOptions options_;
  const ShardMap shard_map_;
  const std::vector<LayerSpecification> layers_;
  std::vector<int> shard_of_layer_;  // by layer index
  std::unique_ptr<ClientState> state_;
  std::vector<std::unique_ptr<ShardStream>> streams_;  // by shard position

  absl::Mutex close_mutex_;
  bool closed_ ABSL_GUARDED_BY(close_mutex_) = false;
};

}  // namespace entrograd

#endif  // ENTROGRAD_TRANSPORT_CLIENT_IMPL_H_
