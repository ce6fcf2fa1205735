// What a client's shard streams share with the client: the Join they send,
// the layer table, the inbox of merged layers and the byte counters. Owned
// by ClientImpl; outlives every ShardStream.
#ifndef ENTROGRAD_TRANSPORT_CLIENT_STATE_H_
#define ENTROGRAD_TRANSPORT_CLIENT_STATE_H_

#include <cstdint>
#include <vector>

#include "entrograd/v1/aggregator.pb.h"
#include "transport/merged_inbox.h"
#include "transport/traffic_counters.h"

namespace entrograd {

struct ClientState {
  explicit ClientState(int64_t applied_step) : inbox(applied_step) {}

  // The Join, complete but for applied_step (filled in per Join from the
  // inbox's watermark). Immutable after Connect.
  v1::Join join;
  // numel of each layer, by layer index. Immutable after Connect.
  std::vector<uint64_t> layer_numels;
  // Thread-safe members.
  MergedInbox inbox;
  TrafficCounters traffic;
};

}  // namespace entrograd

#endif  // ENTROGRAD_TRANSPORT_CLIENT_STATE_H_
