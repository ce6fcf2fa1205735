// A counter of an in-process shard, read from its Prometheus registry (what
// /metrics would serve, without a scrape): for tests that wait until the
// shard has received something the registry's gauges cannot show, e.g.
// entrograd_uplink_dense_bytes_total, which grows by 4 * numel for each
// contribution the shard accepts.
#ifndef ENTROGRAD_TESTS_CLIENT_LIB_TRANSPORT_SHARD_METRICS_H_
#define ENTROGRAD_TESTS_CLIENT_LIB_TRANSPORT_SHARD_METRICS_H_

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "aggregator/server/aggregator_server.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"

namespace entrograd::testing {

// The value of the unlabelled counter `name` of `server`. Errors: NOT_FOUND
// when the shard has no such counter.
inline absl::StatusOr<double> ShardCounter(
    aggregator::AggregatorServer& server, absl::string_view name) {
  for (const prometheus::MetricFamily& family :
       server.metrics_registry().Collect()) {
    if (family.name == name && family.metric.size() == 1) {
      return family.metric[0].counter.value;
    }
  }
  return absl::NotFoundError(absl::StrCat("no counter ", name));
}

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_CLIENT_LIB_TRANSPORT_SHARD_METRICS_H_
