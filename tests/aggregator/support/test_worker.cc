#include "aggregator/support/test_worker.h"

#include "absl/strings/str_cat.h"
#include "entrograd/wire/grpc_status.h"
#include "entrograd/wire/payload_proto.h"

namespace entrograd::testing {

v1::Join MakeJoin(const JoinSpec& spec) {
  v1::Join join;
  join.set_job_id(spec.job_id);
  join.set_rank(spec.rank);
  join.set_world_size(spec.world_size);
  join.set_incarnation(spec.incarnation);
  for (const LayerSpec& layer : spec.layers) {
    v1::LayerInfo* info = join.add_layers();
    info->set_name(layer.name);
    info->set_numel(layer.numel);
  }
  join.set_initial_params_hash(spec.params_hash);
  join.set_applied_step(spec.applied_step);
  for (v1::ValueType type : spec.accepted_value_types) {
    join.add_accepted_value_types(type);
  }
  for (v1::IndexEncoding encoding : spec.accepted_index_encodings) {
    join.add_accepted_index_encodings(encoding);
  }
  return join;
}

v1::LayerUpdate MakeUpdate(int64_t step, uint32_t layer,
                           const EncodedPayload& payload,
                           int64_t applied_step) {
  v1::LayerUpdate update;
  update.set_step(step);
  update.set_layer_index(layer);
  PayloadToProto(payload, update.mutable_payload());
  update.set_applied_step(applied_step);
  return update;
}

TestWorker::TestWorker(std::shared_ptr<grpc::Channel> channel,
                       std::optional<std::string> token,
                       absl::Duration deadline)
    : stub_(v1::Aggregator::NewStub(channel)) {
  context_.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  if (token.has_value()) {
    context_.AddMetadata("authorization", absl::StrCat("Bearer ", *token));
  }
  stream_ = stub_->Exchange(&context_);
}

TestWorker::~TestWorker() {
  if (!finished_) {
    context_.TryCancel();
    stream_->Finish();
  }
}

absl::StatusOr<v1::JoinAck> TestWorker::Join(const v1::Join& join) {
  v1::WorkerMessage message;
  *message.mutable_join() = join;
  Send(message);
  absl::StatusOr<v1::AggregatorMessage> answer = Read();
  if (!answer.ok()) return answer.status();
  if (!answer->has_join_ack()) {
    return absl::InternalError(
        absl::StrCat("expected a JoinAck, got ", answer->ShortDebugString()));
  }
  return answer->join_ack();
}

bool TestWorker::Send(const v1::WorkerMessage& message) {
  return stream_->Write(message);
}

bool TestWorker::SendUpdate(const v1::LayerUpdate& update) {
  v1::WorkerMessage message;
  *message.mutable_layer_update() = update;
  return Send(message);
}

absl::StatusOr<v1::AggregatorMessage> TestWorker::Read() {
  if (finished_) return final_status_.ok() ? absl::OutOfRangeError("stream ended OK") : final_status_;
  v1::AggregatorMessage message;
  if (stream_->Read(&message)) return message;
  finished_ = true;
  final_status_ = StreamEndStatus(stream_->Finish(), context_);
  if (final_status_.ok()) return absl::OutOfRangeError("stream ended OK");
  return final_status_;
}

absl::Status TestWorker::Finish() {
  if (finished_) return final_status_;
  stream_->WritesDone();
  v1::AggregatorMessage ignored;
  while (stream_->Read(&ignored)) ++drained_;
  finished_ = true;
  final_status_ = StreamEndStatus(stream_->Finish(), context_);
  return final_status_;
}

void TestWorker::HalfClose() { stream_->WritesDone(); }

void TestWorker::Cancel() { context_.TryCancel(); }

std::vector<float> ToDense(const DecodedPayload& payload) {
  std::vector<float> dense(payload.numel, 0.0f);
  if (!ScatterInto(payload, absl::MakeSpan(dense)).ok()) dense.clear();
  return dense;
}

absl::StatusOr<DecodedPayload> DecodeMerged(const v1::MergedLayer& merged) {
  return DecodePayload(PayloadViewOfProto(merged.payload()));
}

}  // namespace entrograd::testing
