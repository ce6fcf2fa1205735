#include "aggregator/service/reactor_sink.h"

#include "transport/grpc_status.h"

namespace entrograd::aggregator {

// StartWrite and Finish are called after the mutex is released: gRPC may run
// the resulting OnWriteDone on the calling thread, which takes the mutex
// again. The writing_/finished_ flags, set under the mutex, keep at most one
// write in flight and make Finish happen once, with no write pending.

void ReactorSink::Send(std::shared_ptr<const v1::AggregatorMessage> message) {
  const v1::AggregatorMessage* to_write = nullptr;
  StreamWriter* writer = nullptr;
  {
    absl::MutexLock lock(&mutex_);
    if (writer_ == nullptr || finished_ || finish_after_writes_.has_value()) {
      return;  // the stream ended: the worker gets it again after reconnecting
    }
    queue_.push_back(std::move(message));
    if (writing_) return;
    writing_ = true;
    to_write = queue_.front().get();
    writer = writer_;
  }
  writer->StartMessageWrite(to_write);
}

void ReactorSink::Close(const absl::Status& status) {
  StreamWriter* writer = nullptr;
  {
    absl::MutexLock lock(&mutex_);
    if (writer_ == nullptr || finished_ || finish_after_writes_.has_value()) {
      return;
    }
    if (writing_) {
      finish_after_writes_ = ToGrpcStatus(status);
      return;
    }
    finished_ = true;
    queue_.clear();
    writer = writer_;
  }
  writer->FinishStream(ToGrpcStatus(status));
}

void ReactorSink::WriteDone(bool ok) {
  const v1::AggregatorMessage* to_write = nullptr;
  std::optional<grpc::Status> finish;
  StreamWriter* writer = nullptr;
  {
    absl::MutexLock lock(&mutex_);
    writing_ = false;
    if (!queue_.empty()) queue_.pop_front();
    if (finished_ || writer_ == nullptr) {
      queue_.clear();
      return;
    }
    writer = writer_;
    if (!ok) {
      // The stream broke. gRPC runs OnDone only after Finish, so the sink
      // still finishes it here: otherwise a Close deferred behind this write
      // would never finish the stream, the member would stay registered and
      // server shutdown would wait forever.
      queue_.clear();
      finished_ = true;
      finish = finish_after_writes_.value_or(
          grpc::Status(grpc::StatusCode::CANCELLED,
                       "writing to the worker failed; the stream is closed"));
    } else if (!queue_.empty()) {
      writing_ = true;
      to_write = queue_.front().get();
    } else if (finish_after_writes_.has_value()) {
      finished_ = true;
      finish = finish_after_writes_;
    } else {
      return;
    }
  }
  if (to_write != nullptr) {
    writer->StartMessageWrite(to_write);
  } else {
    writer->FinishStream(*finish);
  }
}

void ReactorSink::Detach() {
  absl::MutexLock lock(&mutex_);
  writer_ = nullptr;
  queue_.clear();
}

}  // namespace entrograd::aggregator
