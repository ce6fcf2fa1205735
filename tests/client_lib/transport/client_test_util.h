// Helpers for the client transport tests: real in-process aggregator shards
// on 127.0.0.1 (killable and restartable on the same port), a job's ranks
// connected in one call, deterministic contributions and the reference merge
// (both built on aggregator/support), and a worker loop that drives a Client
// through steps the way a training job does.
#ifndef ENTROGRAD_TESTS_CLIENT_LIB_TRANSPORT_CLIENT_TEST_UTIL_H_
#define ENTROGRAD_TESTS_CLIENT_LIB_TRANSPORT_CLIENT_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "aggregator/server/aggregator_server.h"
#include "aggregator/support/random_updates.h"
#include "aggregator/support/reference_merge.h"
#include "aggregator/support/sparse_vector.h"
#include "entrograd/client.h"
#include "entrograd/codec.h"
#include "gtest/gtest.h"
#include "support/wait_for.h"

namespace entrograd::testing {

// S aggregator shards in this process, each on its own 127.0.0.1 port.
class Shards {
 public:
  // `configure` may change each shard's config (listen address aside).
  explicit Shards(
      int count, absl::Duration round_timeout = absl::Seconds(20),
      std::function<void(aggregator::AggregatorConfig&)> configure = {})
      : round_timeout_(round_timeout), configure_(std::move(configure)) {
    for (int i = 0; i < count; ++i) {
      servers_.push_back(StartOn("127.0.0.1:0"));
      ports_.push_back(servers_.back() ? servers_.back()->port() : 0);
    }
  }

  std::vector<std::string> addresses() const {
    std::vector<std::string> out;
    for (int port : ports_) out.push_back(absl::StrCat("127.0.0.1:", port));
    return out;
  }
  aggregator::AggregatorServer& server(int i) { return *servers_[i]; }
  // Shard i's port; it stays the same across Kill and Restart.
  int port(int i) const { return ports_[i]; }
  bool ok() const {
    for (const auto& server : servers_) {
      if (server == nullptr) return false;
    }
    return true;
  }

  // As if the shard's process were SIGKILLed: no drain, streams cut.
  void Kill(int i) {
    servers_[i]->Abandon();
    servers_[i].reset();
  }
  // A fresh shard (no state) on the killed one's port.
  void Restart(int i) {
    servers_[i] = StartOn(absl::StrCat("127.0.0.1:", ports_[i]));
    ASSERT_NE(servers_[i], nullptr);
  }

 private:
  std::unique_ptr<aggregator::AggregatorServer> StartOn(
      const std::string& listen) {
    aggregator::AggregatorConfig config;
    config.listen = listen;
    config.metrics_listen = "";
    config.registry.round_timeout = round_timeout_;
    if (configure_) configure_(config);
    // A port just released may need a moment before it can be bound again:
    // this polls for the bind to succeed (the event itself), up to 5 s.
    absl::Status last_error;
    for (int attempt = 0; attempt < 50; ++attempt) {
      auto server = aggregator::AggregatorServer::Start(config);
      if (server.ok()) return std::move(*server);
      last_error = server.status();
      absl::SleepFor(absl::Milliseconds(100));
    }
    ADD_FAILURE() << "cannot start an aggregator on " << listen << ": "
                  << last_error;
    return nullptr;
  }

  absl::Duration round_timeout_;
  std::function<void(aggregator::AggregatorConfig&)> configure_;
  std::vector<std::unique_ptr<aggregator::AggregatorServer>> servers_;
  std::vector<int> ports_;
};

// Options for fast tests: short backoff, bounded waits.
inline ClientOptions TestOptions(const std::vector<std::string>& shards,
                                 const std::string& job_id, uint32_t rank,
                                 uint32_t world_size) {
  ClientOptions options;
  options.shards = shards;
  options.job_id = job_id;
  options.rank = rank;
  options.world_size = world_size;
  options.incarnation = 1;
  options.merge_timeout = absl::Seconds(30);
  options.reconnect_initial_backoff = absl::Milliseconds(50);
  options.reconnect_max_backoff = absl::Milliseconds(500);
  options.reconnect_give_up_after = absl::Seconds(30);
  return options;
}

// Connects ranks 0 .. world_size - 1 of `job`, one after another (each
// Connect returns once its rank joined every shard), with TestOptions;
// `configure`, when set, may change each rank's options first. Errors: the
// first failing Connect's.
inline absl::StatusOr<std::vector<std::unique_ptr<Client>>> ConnectRanks(
    const Shards& shards, const std::string& job, uint32_t world_size,
    const std::vector<LayerSpecification>& layers,
    uint64_t initial_params_hash,
    const std::function<void(ClientOptions&)>& configure = {}) {
  std::vector<std::unique_ptr<Client>> clients;
  for (uint32_t rank = 0; rank < world_size; ++rank) {
    ClientOptions options =
        TestOptions(shards.addresses(), job, rank, world_size);
    if (configure) configure(options);
    absl::StatusOr<std::unique_ptr<Client>> client =
        Client::Connect(std::move(options), layers, initial_params_hash);
    if (!client.ok()) return client.status();
    clients.push_back(std::move(*client));
  }
  return clients;
}

inline std::vector<LayerSpecification> TestLayers(int count) {
  std::vector<LayerSpecification> layers;
  for (int l = 0; l < count; ++l) {
    layers.push_back({absl::StrCat("layer", l, ".weight"),
                      static_cast<uint64_t>(500 + 700 * l)});
  }
  return layers;
}

// Layers whose index is divisible by 3 are sent dense, the rest sparse.
inline bool IsDenseLayer(uint32_t layer) { return layer % 3 == 0; }

// The deterministic contribution of (rank, step, layer), from
// aggregator/support's generators: a sparse one with distinct ascending
// indices and heavy-tailed values, or a dense one with no exact zeros.
inline LayerContribution MakeContribution(uint32_t rank, int64_t step,
                                          uint32_t layer, uint64_t numel) {
  std::mt19937 rng(
      static_cast<uint32_t>(rank * 1000003u + step * 7919u + layer));
  LayerContribution contribution;
  contribution.step = step;
  contribution.layer = layer;
  contribution.numel = numel;
  contribution.dense = IsDenseLayer(layer);
  if (contribution.dense) {
    contribution.values = HeavyTailedValues(numel, rng);
  } else {
    // numel / 20 + rank indices: the ranks overlap partly.
    SparseVector sparse = RandomSparse(numel, numel / 20 + rank, rng);
    contribution.indices = std::move(sparse.indices);
    contribution.values = std::move(sparse.values);
  }
  contribution.entropy = 1.0;
  contribution.keep_ratio = static_cast<double>(contribution.values.size()) /
                            static_cast<double>(numel);
  return contribution;
}

// A dense contribution of (step, layer): `numel` copies of `value`.
inline LayerContribution DenseContribution(int64_t step, uint32_t layer,
                                           uint64_t numel, float value) {
  LayerContribution contribution;
  contribution.step = step;
  contribution.layer = layer;
  contribution.numel = numel;
  contribution.dense = true;
  contribution.values.assign(numel, value);
  return contribution;
}

// aggregator/support's reference merge of the ranks' contributions (ranks[r]
// is rank r's), dense: +0.0 where no rank carries an index. A dense
// contribution carries every one of its elements.
inline std::vector<float> ReferenceMergeDense(
    const std::vector<LayerContribution>& ranks) {
  std::vector<SparseVector> sparse;
  for (const LayerContribution& rank : ranks) {
    SparseVector vector;
    vector.numel = rank.numel;
    vector.values = rank.values;
    if (rank.dense) {
      vector.indices.resize(rank.values.size());
      std::iota(vector.indices.begin(), vector.indices.end(), 0u);
    } else {
      vector.indices = rank.indices;
    }
    sparse.push_back(std::move(vector));
  }
  return ReferenceMergeDense(sparse);
}

inline std::vector<float> ToDense(const DecodedPayload& payload) {
  std::vector<float> dense(payload.numel, 0.0f);
  EXPECT_TRUE(ScatterInto(payload, absl::MakeSpan(dense)).ok());
  return dense;
}

inline bool BitwiseEqual(const std::vector<float>& a,
                         const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// The merged update as bytes: numel, dense flag, indices, values.
inline std::string PayloadBytes(const DecodedPayload& payload) {
  std::string bytes =
      absl::StrCat(payload.numel, payload.dense ? "d" : "s", ":");
  bytes.append(reinterpret_cast<const char*>(payload.indices.data()),
               payload.indices.size() * sizeof(uint32_t));
  bytes.append(reinterpret_cast<const char*>(payload.values.data()),
               payload.values.size() * sizeof(float));
  return bytes;
}

using RoundKey = std::pair<int64_t, uint32_t>;  // (step, layer)

// What one worker got.
struct WorkerRun {
  absl::Status status;  // first failure of SendLayer / WaitMerged
  std::map<RoundKey, MergedLayerUpdate> merged;
  ClientTraffic traffic;
};

// Hooks of RunWorker, called on the worker's thread.
struct WorkerHooks {
  std::function<void(int64_t step)> before_step;    // before its SendLayers
  std::function<void(int64_t step)> after_sends;    // after its SendLayers
  std::function<void(int64_t step)> after_applied;  // after MarkApplied
};

// Drives `client` through steps [0, steps): send every layer (odd layers
// from a second thread, as concurrent autograd hooks would, in reverse
// order), wait for every merged layer, MarkApplied. Stops at the first
// error.
inline WorkerRun RunWorker(Client& client, uint32_t rank, int64_t steps,
                           const std::vector<LayerSpecification>& layers,
                           const WorkerHooks& hooks = {}) {
  WorkerRun run;
  const uint32_t count = static_cast<uint32_t>(layers.size());
  for (int64_t step = 0; step < steps && run.status.ok(); ++step) {
    if (hooks.before_step) hooks.before_step(step);
    absl::Status odd_status;
    std::thread odd([&] {
      for (uint32_t l = count; l-- > 0;) {
        if (l % 2 == 1 && odd_status.ok()) {
          odd_status = client.SendLayer(
              MakeContribution(rank, step, l, layers[l].numel));
        }
      }
    });
    for (uint32_t l = count; l-- > 0;) {
      if (l % 2 == 0 && run.status.ok()) {
        run.status =
            client.SendLayer(MakeContribution(rank, step, l, layers[l].numel));
      }
    }
    odd.join();
    if (run.status.ok()) run.status = odd_status;
    if (!run.status.ok()) break;
    if (hooks.after_sends) hooks.after_sends(step);
    for (uint32_t l = 0; l < count; ++l) {
      absl::StatusOr<MergedLayerUpdate> merged = client.WaitMerged(step, l);
      if (!merged.ok()) {
        run.status = merged.status();
        break;
      }
      run.merged[RoundKey(step, l)] = std::move(*merged);
    }
    if (!run.status.ok()) break;
    client.MarkApplied(step);
    if (hooks.after_applied) hooks.after_applied(step);
  }
  run.traffic = client.traffic();
  return run;
}

// Checks every worker's merged updates against the reference merge of all
// ranks' contributions, bitwise, and that all workers got the same bytes.
inline void ExpectMergedEqualReference(
    const std::vector<WorkerRun>& runs, int64_t steps,
    const std::vector<LayerSpecification>& layers) {
  const uint32_t world = static_cast<uint32_t>(runs.size());
  for (int64_t step = 0; step < steps; ++step) {
    for (uint32_t l = 0; l < layers.size(); ++l) {
      std::vector<LayerContribution> contributions;
      for (uint32_t rank = 0; rank < world; ++rank) {
        contributions.push_back(
            MakeContribution(rank, step, l, layers[l].numel));
      }
      const std::vector<float> reference = ReferenceMergeDense(contributions);
      std::string first_bytes;
      for (uint32_t rank = 0; rank < world; ++rank) {
        auto it = runs[rank].merged.find(RoundKey(step, l));
        ASSERT_NE(it, runs[rank].merged.end())
            << "rank " << rank << " has no merged step " << step << " layer "
            << l;
        EXPECT_EQ(it->second.step, step);
        EXPECT_EQ(it->second.layer, l);
        EXPECT_TRUE(BitwiseEqual(ToDense(it->second.payload), reference))
            << "rank " << rank << ", step " << step << ", layer " << l;
        const std::string bytes = PayloadBytes(it->second.payload);
        if (rank == 0) {
          first_bytes = bytes;
        } else {
          EXPECT_EQ(bytes, first_bytes)
              << "rank " << rank << " got other bytes";
        }
      }
    }
  }
}

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_CLIENT_LIB_TRANSPORT_CLIENT_TEST_UTIL_H_
