// The byte counters behind Client::traffic(), shared by the client's shard
// streams. Private to the transport.
//
// Thread safety: every member is atomic; Snapshot may run concurrently with
// updates (each counter is read on its own, not as one consistent cut).
#ifndef ENTROGRAD_TRANSPORT_TRAFFIC_COUNTERS_H_
#define ENTROGRAD_TRANSPORT_TRAFFIC_COUNTERS_H_

#include <atomic>
#include <cstdint>

#include "entrograd/client.h"

namespace entrograd {

struct TrafficCounters {
  std::atomic<int64_t> uplink_wire_bytes{0};
  std::atomic<int64_t> uplink_dense_bytes{0};
  std::atomic<int64_t> downlink_wire_bytes{0};
  std::atomic<int64_t> downlink_dense_bytes{0};
  std::atomic<int64_t> reconnects{0};
  std::atomic<int64_t> saturated_values{0};

  ClientTraffic Snapshot() const {
    ClientTraffic traffic;
    traffic.uplink_wire_bytes = uplink_wire_bytes.load();
    traffic.uplink_dense_bytes = uplink_dense_bytes.load();
    traffic.downlink_wire_bytes = downlink_wire_bytes.load();
    traffic.downlink_dense_bytes = downlink_dense_bytes.load();
    traffic.reconnects = reconnects.load();
    traffic.saturated_values = saturated_values.load();
    return traffic;
  }
};

}  // namespace entrograd

#endif  // ENTROGRAD_TRANSPORT_TRAFFIC_COUNTERS_H_
