// A protocol-level test client for the aggregator: one Exchange stream,
// driven synchronously (gRPC sync API) so tests read as the protocol does:
// Join, send updates, read what comes back. Every stream has a deadline, so
// a server that never answers fails the test instead of hanging it.
//
// Thread safety: one thread per TestWorker (Send and Read may run on two
// threads, as gRPC's sync streams allow).
#ifndef ENTROGRAD_TESTS_AGGREGATOR_SUPPORT_TEST_WORKER_H_
#define ENTROGRAD_TESTS_AGGREGATOR_SUPPORT_TEST_WORKER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "entrograd/codec.h"
#include "entrograd/v1/aggregator.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace entrograd::testing {

struct LayerSpec {
  std::string name;
  uint64_t numel = 0;
};

struct JoinSpec {
  std::string job_id = "job";
  uint32_t rank = 0;
  uint32_t world_size = 1;
  uint64_t incarnation = 1;
  std::vector<LayerSpec> layers = {{"layer0", 1000}};
  uint64_t params_hash = 42;
  int64_t applied_step = -1;
  std::vector<v1::ValueType> accepted_value_types = {v1::VALUE_TYPE_F32};
  std::vector<v1::IndexEncoding> accepted_index_encodings;
};

v1::Join MakeJoin(const JoinSpec& spec);

// A LayerUpdate carrying `payload` (use EncodeSparse / EncodeDense).
v1::LayerUpdate MakeUpdate(int64_t step, uint32_t layer,
                           const EncodedPayload& payload,
                           int64_t applied_step = -1);

class TestWorker {
 public:
  // Opens the stream. `token` is sent as "authorization: Bearer <token>"
  // when set.
  TestWorker(std::shared_ptr<grpc::Channel> channel,
             std::optional<std::string> token = std::nullopt,
             absl::Duration deadline = absl::Seconds(60));
  ~TestWorker();

  // Sends the Join and reads the answer: the JoinAck, or the stream's final
  // status when the server refused.
  absl::StatusOr<v1::JoinAck> Join(const v1::Join& join);
  // Writes one message; false when the stream is broken.
  bool Send(const v1::WorkerMessage& message);
  bool SendUpdate(const v1::LayerUpdate& update);
  // The next message, or the stream's final status once it ended.
  absl::StatusOr<v1::AggregatorMessage> Read();
  // Half-closes, reads whatever is still queued (counted in drained()) and
  // returns the final status.
  absl::Status Finish();
  int drained() const { return drained_; }
  // Half-closes without reading: the server sees the end of the worker's
  // messages while its own writes may still be in flight.
  void HalfClose();
  // Cancels the stream (a worker that died).
  void Cancel();

 private:
  grpc::ClientContext context_;
  std::unique_ptr<v1::Aggregator::Stub> stub_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::WorkerMessage, v1::AggregatorMessage>>
      stream_;
  bool finished_ = false;
  int drained_ = 0;
  absl::Status final_status_;
};

// The dense float vector a decoded payload stands for.
std::vector<float> ToDense(const DecodedPayload& payload);

// Decodes a MergedLayer's payload or fails.
absl::StatusOr<DecodedPayload> DecodeMerged(const v1::MergedLayer& merged);

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_AGGREGATOR_SUPPORT_TEST_WORKER_H_
