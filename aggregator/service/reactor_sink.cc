#include "aggregator/service/reactor_sink.h"

#include "absl/strings/str_cat.h"

namespace entrograd::aggregator {

// StartWrite and Finish are called after the mutex is released: gRPC may run
// the resulting OnWriteDone on the calling thread, which takes the mutex
// again. The writing_/finished_ flags and the hold count, set under the
// mutex, keep at most one write in flight and make Finish happen once, with
// no write pending and no hold out.

void ReactorSink::Send(std::shared_ptr<const v1::AggregatorMessage> message) {
  const v1::AggregatorMessage* to_write = nullptr;
  std::optional<absl::Status> finish;
  StreamWriter* writer = nullptr;
  {
    absl::MutexLock lock(&mutex_);
    if (writer_ == nullptr || finished_ || finish_after_writes_.has_value()) {
      return;  // the stream ended: the worker gets it again after reconnecting
    }
    const auto bytes = static_cast<int64_t>(message->ByteSizeLong());
    if (!queue_.empty() && queued_bytes_ + bytes > max_queued_bytes_) {
      EndSlowReaderLocked(bytes);
      // Finished once the write in flight is done and no hold is out.
      finish = TakeFinishLocked();
      if (!finish.has_value()) return;
    } else {
      queue_.push_back(std::move(message));
      sizes_.push_back(bytes);
      queued_bytes_ += bytes;
      if (writing_) return;
      writing_ = true;
      to_write = queue_.front().get();
    }
    writer = writer_;
  }
  if (finish.has_value()) {
    writer->FinishStream(*finish);
  } else {
    writer->StartMessageWrite(to_write);
  }
}

void ReactorSink::EndSlowReaderLocked(int64_t refused_bytes) {
  // Keep only the message being written (gRPC still holds it); the rest is
  // what the worker will get again after it reconnects and resends.
  const int64_t held = queued_bytes_;
  if (writing_ && !queue_.empty()) {
    queue_.resize(1);
    sizes_.resize(1);
    queued_bytes_ = sizes_.front();
  } else {
    queue_.clear();
    sizes_.clear();
    queued_bytes_ = 0;
  }
  finish_after_writes_ = absl::ResourceExhaustedError(
      absl::StrCat("the worker reads too slowly: ", held, " bytes queued + ",
                   refused_bytes,
                   " > the stream queue bound --max_stream_queue_bytes = ",
                   max_queued_bytes_,
                   "; reconnect (the shard sends its answers again)"));
}

std::optional<absl::Status> ReactorSink::TakeFinishLocked() {
  if (finished_ || !finish_after_writes_.has_value() || writing_ ||
      holds_ > 0 || writer_ == nullptr) {
    return std::nullopt;
  }
  finished_ = true;
  queue_.clear();
  sizes_.clear();
  queued_bytes_ = 0;
  return finish_after_writes_;
}

void ReactorSink::Close(const absl::Status& status) {
  std::optional<absl::Status> finish;
  StreamWriter* writer = nullptr;
  {
    absl::MutexLock lock(&mutex_);
    if (writer_ == nullptr || finished_ || finish_after_writes_.has_value()) {
      return;
    }
    finish_after_writes_ = status;
    // Else finished after the write in flight, or at the last Release.
    finish = TakeFinishLocked();
    if (!finish.has_value()) return;
    writer = writer_;
  }
  writer->FinishStream(*finish);
}

void ReactorSink::WriteDone(bool ok) {
  const v1::AggregatorMessage* to_write = nullptr;
  std::optional<absl::Status> finish;
  StreamWriter* writer = nullptr;
  {
    absl::MutexLock lock(&mutex_);
    writing_ = false;
    if (!queue_.empty()) {
      queued_bytes_ -= sizes_.front();
      queue_.pop_front();
      sizes_.pop_front();
    }
    if (finished_ || writer_ == nullptr) {
      queue_.clear();
      sizes_.clear();
      queued_bytes_ = 0;
      return;
    }
    writer = writer_;
    if (!ok) {
      // The stream broke. gRPC runs OnDone only after Finish, so the sink
      // still finishes it (here, or at the last Release): otherwise a Close
      // deferred behind this write would never finish the stream, the member
      // would stay registered and server shutdown would wait forever.
      queue_.clear();
      sizes_.clear();
      queued_bytes_ = 0;
      if (!finish_after_writes_.has_value()) {
        finish_after_writes_ = absl::CancelledError(
            "writing to the worker failed; the stream is closed");
      }
      finish = TakeFinishLocked();
      if (!finish.has_value()) return;
    } else if (!queue_.empty()) {
      writing_ = true;
      to_write = queue_.front().get();
    } else {
      finish = TakeFinishLocked();
      if (!finish.has_value()) return;
    }
  }
  if (to_write != nullptr) {
    writer->StartMessageWrite(to_write);
  } else {
    writer->FinishStream(*finish);
  }
}

void ReactorSink::Hold() {
  absl::MutexLock lock(&mutex_);
  ++holds_;
}

void ReactorSink::Release() {
  std::optional<absl::Status> finish;
  StreamWriter* writer = nullptr;
  {
    absl::MutexLock lock(&mutex_);
    --holds_;
    finish = TakeFinishLocked();
    if (!finish.has_value()) return;
    writer = writer_;
  }
  writer->FinishStream(*finish);
}

bool ReactorSink::Closing() {
  absl::MutexLock lock(&mutex_);
  return writer_ == nullptr || finished_ || finish_after_writes_.has_value();
}

void ReactorSink::Detach() {
  absl::MutexLock lock(&mutex_);
  writer_ = nullptr;
  queue_.clear();
  sizes_.clear();
  queued_bytes_ = 0;
}

}  // namespace entrograd::aggregator
