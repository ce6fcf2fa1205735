// libFuzzer harness: what hostile or buggy workers can send, straight into
// JobRegistry (no gRPC), as the service would hand it over. The input is a
// sequence of frames, each "2-byte stream id, 4-byte length, serialized
// WorkerMessage" (little-endian); a frame that does not parse as the proto
// is skipped. Up to 8 streams, each with a recording sink; a stream's first
// accepted Join fixes its member id, later messages on it are Contribute
// calls; stream ids with the top bit set end the stream (Leave). At the end
// every round is aborted and every stream leaves: no round may be left in
// flight, and nothing may crash, leak or trip a sanitizer. (A job whose
// streams all left can still be kept for its completed or aborted rounds'
// records; bounding those is an open hardening item, so it is not checked.)
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>

#include "aggregator/rounds/job_registry.h"
#include "aggregator/rounds/stream_sink.h"
#include "entrograd/v1/aggregator.pb.h"

namespace {

using entrograd::aggregator::JobRegistry;
using entrograd::aggregator::MemberId;
using entrograd::aggregator::RegistryOptions;
using entrograd::aggregator::StreamSink;

class CountingSink : public StreamSink {
 public:
  void Send(std::shared_ptr<const entrograd::v1::AggregatorMessage> message) override {
    if (closed_) return;
    // The registry promises the JoinAck first on every stream.
    if (messages_ == 0 && !message->has_join_ack()) __builtin_trap();
    ++messages_;
  }
  void Close(const absl::Status&) override { closed_ = true; }

 private:
  int messages_ = 0;
  bool closed_ = false;
};

struct Stream {
  std::shared_ptr<CountingSink> sink;
  std::optional<MemberId> member;
};

constexpr size_t kStreams = 8;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  RegistryOptions options;
  options.memory_quota_bytes = int64_t{64} << 20;  // keep a run's memory small
  options.max_world_size = 64;
  options.max_layers = 64;
  options.max_message_bytes = uint64_t{8} << 20;
  JobRegistry registry(options, /*metrics=*/nullptr);
  std::array<Stream, kStreams> streams;
  while (size >= 6) {
    uint16_t id = 0;
    uint32_t length = 0;
    std::memcpy(&id, data, 2);
    std::memcpy(&length, data + 2, 4);
    data += 6;
    size -= 6;
    length = static_cast<uint32_t>(std::min<size_t>(length, size));
    Stream& stream = streams[id % kStreams];
    if (id & 0x8000) {  // the stream ends
      if (stream.member.has_value()) registry.Leave(*stream.member, stream.sink.get());
      stream = Stream();
    } else {
      entrograd::v1::WorkerMessage message;
      if (message.ParseFromArray(data, static_cast<int>(length))) {
        if (!stream.member.has_value() && message.has_join()) {
          auto sink = std::make_shared<CountingSink>();
          absl::StatusOr<MemberId> member =
              registry.Join(message.join(), std::nullopt, sink);
          if (member.ok()) {
            stream.sink = std::move(sink);
            stream.member = *member;
          }
        } else if (stream.member.has_value() && message.has_layer_update()) {
          registry.Contribute(*stream.member, message.layer_update()).IgnoreError();
        }
      }
    }
    data += length;
    size -= length;
  }
  registry.AbortAllRounds("fuzz input ended");
  for (Stream& stream : streams) {
    if (stream.member.has_value()) registry.Leave(*stream.member, stream.sink.get());
  }
  if (registry.RoundsInFlight() != 0) __builtin_trap();
  return 0;
}
