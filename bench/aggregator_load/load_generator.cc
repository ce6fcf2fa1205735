#include "bench/aggregator_load/load_generator.h"

#include <algorithm>
#include <memory>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "bench/aggregator_load/sparse_payloads.h"
#include "entrograd/client.h"

namespace entrograd::bench {

namespace {

// One rank: its client, payloads and the times of each of its rounds.
struct RankState {
  int job = 0;
  int rank = 0;
  std::vector<std::vector<LayerContribution>> payloads;  // [variant][layer]
  std::unique_ptr<Client> client;
  // Indexed step * layers + layer; absl::Now() in nanoseconds.
  std::vector<int64_t> sent_ns;
  std::vector<int64_t> arrived_ns;
  ClientTraffic traffic;
};

// Errors from every thread, and the start gate.
class Shared {
 public:
  explicit Shared(int ranks) : waiting_(ranks) {}

  void Error(const std::string& what, const absl::Status& status) {
    absl::MutexLock lock(&mutex_);
    ++errors_;
    if (first_errors_.size() < 10) {
      first_errors_.push_back(absl::StrCat(what, ": ", status.ToString()));
    }
  }

  // Every rank arrives once connected (or failed); the last one in runs
  // `on_all_connected` and opens the gate.
  void ArriveAndWait(const std::function<void()>& on_all_connected) {
    absl::MutexLock lock(&mutex_);
    if (--waiting_ == 0) {
      if (on_all_connected) on_all_connected();
      start_ = absl::Now();
      open_ = true;
      return;
    }
    mutex_.Await(absl::Condition(&open_));
  }

  absl::Time start() const {
    absl::MutexLock lock(&mutex_);
    return start_;
  }
  int64_t errors() const {
    absl::MutexLock lock(&mutex_);
    return errors_;
  }
  std::vector<std::string> first_errors() const {
    absl::MutexLock lock(&mutex_);
    return first_errors_;
  }

 private:
  mutable absl::Mutex mutex_;
  int waiting_ ABSL_GUARDED_BY(mutex_);
  bool open_ ABSL_GUARDED_BY(mutex_) = false;
  absl::Time start_ ABSL_GUARDED_BY(mutex_);
  int64_t errors_ ABSL_GUARDED_BY(mutex_) = 0;
  std::vector<std::string> first_errors_ ABSL_GUARDED_BY(mutex_);
};

int64_t NowNanos() { return absl::ToUnixNanos(absl::Now()); }

ClientOptions RankClientOptions(const LoadOptions& options,
                                const std::vector<std::string>& shards,
                                int job, int rank) {
  ClientOptions client;
  client.shards = shards;
  client.job_id = absl::StrCat("load-job", job);
  client.rank = static_cast<uint32_t>(rank);
  client.world_size = static_cast<uint32_t>(options.ranks);
  client.incarnation = 1;
  client.merge_timeout = options.merge_timeout;
  return client;
}

// Sends every layer of every step and waits for the merged layers; stops
// at the first error (the other ranks of the job then fail their rounds).
void DriveRank(const LoadOptions& options,
               const std::vector<LayerSpecification>& layers,
               absl::Time deadline, RankState& state, Shared& shared) {
  const uint32_t count = static_cast<uint32_t>(layers.size());
  const std::string who = absl::StrCat("job ", state.job, " rank ", state.rank);
  for (int64_t step = 0; step < options.steps; ++step) {
    if (absl::Now() > deadline) {
      shared.Error(absl::StrCat(who, " step ", step),
                   absl::DeadlineExceededError("--run_timeout passed"));
      return;
    }
    const auto& variant = state.payloads[step % state.payloads.size()];
    for (uint32_t l = 0; l < count; ++l) {
      LayerContribution contribution = variant[l];
      contribution.step = step;
      absl::Status status = state.client->SendLayer(std::move(contribution));
      state.sent_ns[step * count + l] = NowNanos();
      if (!status.ok()) {
        shared.Error(absl::StrCat(who, " SendLayer step ", step, " layer ", l),
                     status);
        return;
      }
    }
    for (uint32_t l = 0; l < count; ++l) {
      absl::StatusOr<MergedLayerUpdate> merged =
          state.client->WaitMerged(step, l);
      state.arrived_ns[step * count + l] = NowNanos();
      if (!merged.ok()) {
        shared.Error(
            absl::StrCat(who, " WaitMerged step ", step, " layer ", l),
            merged.status());
        return;
      }
      if (merged->payload.numel != layers[l].numel) {
        shared.Error(absl::StrCat(who, " step ", step, " layer ", l),
                     absl::InternalError(absl::StrCat(
                         "merged numel ", merged->payload.numel, " != ",
                         layers[l].numel)));
        return;
      }
    }
    state.client->MarkApplied(step);
  }
}

void RunRank(const LoadOptions& options,
             const std::vector<std::string>& shards,
             const std::vector<LayerSpecification>& layers,
             const std::function<void()>& on_connected, RankState& state,
             Shared& shared) {
  // Payloads first, before the clock: replaying them costs a copy.
  state.payloads.resize(options.payload_variants);
  for (int v = 0; v < options.payload_variants; ++v) {
    for (uint32_t l = 0; l < layers.size(); ++l) {
      state.payloads[v].push_back(MakeLoadContribution(
          options, state.job, state.rank, l, layers[l].numel, v));
    }
  }
  // Every rank of every job starts from the same (arbitrary) parameters.
  constexpr uint64_t kInitialParamsHash = 0x12;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(
      RankClientOptions(options, shards, state.job, state.rank), layers,
      kInitialParamsHash);
  if (!client.ok()) {
    shared.Error(absl::StrCat("job ", state.job, " rank ", state.rank,
                              " Connect"),
                 client.status());
  } else {
    state.client = std::move(*client);
  }
  shared.ArriveAndWait(on_connected);
  if (state.client == nullptr) return;
  DriveRank(options, layers, shared.start() + options.run_timeout, state,
            shared);
}

// Per round: the latest arrival minus the latest send over the job's
// ranks, for rounds every rank completed.
void CollectLatencies(const LoadOptions& options, int layer_count,
                      const std::vector<std::unique_ptr<RankState>>& states,
                      LoadResult& result) {
  const int64_t per_rank = options.steps * layer_count;
  for (int job = 0; job < options.jobs; ++job) {
    for (int64_t round = 0; round < per_rank; ++round) {
      int64_t last_sent = 0;
      int64_t last_arrived = 0;
      bool complete = true;
      for (int rank = 0; rank < options.ranks; ++rank) {
        const RankState& state = *states[job * options.ranks + rank];
        if (state.sent_ns[round] == 0 || state.arrived_ns[round] == 0) {
          complete = false;
          break;
        }
        last_sent = std::max(last_sent, state.sent_ns[round]);
        last_arrived = std::max(last_arrived, state.arrived_ns[round]);
      }
      if (!complete) continue;
      ++result.rounds_completed;
      result.round_latency_seconds.push_back(
          std::max<int64_t>(0, last_arrived - last_sent) * 1e-9);
    }
  }
}

}  // namespace

LoadResult RunLoad(const LoadOptions& options,
                   const std::vector<std::string>& shard_addresses,
                   const std::function<void()>& on_connected) {
  const std::vector<LayerSpecification> layers = LayerSizes(options.layers);
  const int total = options.jobs * options.ranks;
  Shared shared(total);
  std::vector<std::unique_ptr<RankState>> states;
  for (int job = 0; job < options.jobs; ++job) {
    for (int rank = 0; rank < options.ranks; ++rank) {
      auto state = std::make_unique<RankState>();
      state->job = job;
      state->rank = rank;
      state->sent_ns.assign(options.steps * layers.size(), 0);
      state->arrived_ns.assign(options.steps * layers.size(), 0);
      states.push_back(std::move(state));
    }
  }
  std::vector<std::thread> threads;
  for (auto& state : states) {
    threads.emplace_back([&, raw = state.get()] {
      RunRank(options, shard_addresses, layers, on_connected, *raw, shared);
    });
  }
  for (std::thread& thread : threads) thread.join();
  LoadResult result;
  result.elapsed = absl::Now() - shared.start();
  for (auto& state : states) {
    if (state->client == nullptr) continue;
    const ClientTraffic traffic = state->client->traffic();
    result.uplink_wire_bytes += traffic.uplink_wire_bytes;
    result.downlink_wire_bytes += traffic.downlink_wire_bytes;
    result.reconnects += traffic.reconnects;
    state->client->Close();
  }
  CollectLatencies(options, static_cast<int>(layers.size()), states, result);
  result.errors = shared.errors();
  result.first_errors = shared.first_errors();
  return result;
}

}  // namespace entrograd::bench
