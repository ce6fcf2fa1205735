#include "aggregator/service/reactor_sink.h"

#include "transport/grpc_status.h"

namespace entrograd::aggregator {

// StartWrite and Finish are called after the mutex is released: gRPC may run
// the resulting OnWriteDone on the calling thread, which takes the mutex
// again. The writing_/finished_ flags, set under the mutex, keep at most one
// write in flight and make Finish happen once, with no write pending.

void ReactorSink::Send(std::shared_ptr<const v1::AggregatorMessage> message) {
  const v1::AggregatorMessage* to_write = nullptr;
  Reactor* reactor = nullptr;
  {
    absl::MutexLock lock(&mutex_);
    if (reactor_ == nullptr || finished_ || finish_after_writes_.has_value()) {
      return;  // the stream ended: the worker gets it again after reconnecting
    }
    queue_.push_back(std::move(message));
    if (writing_) return;
    writing_ = true;
    to_write = queue_.front().get();
    reactor = reactor_;
  }
  reactor->StartWrite(to_write);
}

void ReactorSink::Close(const absl::Status& status) {
  Reactor* reactor = nullptr;
  {
    absl::MutexLock lock(&mutex_);
    if (reactor_ == nullptr || finished_ || finish_after_writes_.has_value()) {
      return;
    }
    if (writing_) {
      finish_after_writes_ = ToGrpcStatus(status);
      return;
    }
    finished_ = true;
    queue_.clear();
    reactor = reactor_;
  }
  reactor->Finish(ToGrpcStatus(status));
}

void ReactorSink::WriteDone(bool ok) {
  const v1::AggregatorMessage* to_write = nullptr;
  std::optional<grpc::Status> finish;
  Reactor* reactor = nullptr;
  {
    absl::MutexLock lock(&mutex_);
    writing_ = false;
    if (!queue_.empty()) queue_.pop_front();
    if (!ok) {
      queue_.clear();  // the stream broke; OnDone follows
      return;
    }
    if (finished_ || reactor_ == nullptr) return;
    reactor = reactor_;
    if (!queue_.empty()) {
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
    reactor->StartWrite(to_write);
  } else {
    reactor->Finish(*finish);
  }
}

void ReactorSink::Detach() {
  absl::MutexLock lock(&mutex_);
  reactor_ = nullptr;
  queue_.clear();
}

}  // namespace entrograd::aggregator
