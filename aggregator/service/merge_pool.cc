#include "aggregator/service/merge_pool.h"

#include <utility>

namespace entrograd::aggregator {

namespace {

absl::Status Stopping() {
  return absl::UnavailableError(
      "the aggregator is shutting down; reconnect and resend");
}

}  // namespace

MergePool::MergePool(int threads) {
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i)
    threads_.emplace_back([this] { RunLoop(); });
}

MergePool::~MergePool() {
  Stop();
  for (std::thread& thread : threads_) thread.join();
}

void MergePool::Submit(Task task) {
  {
    absl::MutexLock lock(&mutex_);
    if (!stopping_) {
      queue_.push_back(std::move(task));
      return;
    }
  }
  std::move(task)(Stopping());
}

void MergePool::Stop() {
  std::deque<Task> cancelled;
  {
    absl::MutexLock lock(&mutex_);
    stopping_ = true;
    cancelled.swap(queue_);
  }
  // Outside the lock: a cancelled task ends its stream, and may submit.
  for (Task& task : cancelled) std::move(task)(Stopping());
  absl::MutexLock lock(&mutex_);
  mutex_.Await(absl::Condition(this, &MergePool::IdleLocked));
}

void MergePool::RunLoop() {
  while (true) {
    Task task;
    {
      absl::MutexLock lock(&mutex_);
      mutex_.Await(absl::Condition(this, &MergePool::WorkOrStopLocked));
      if (queue_.empty()) return;  // stopping, and nothing left to run
      task = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    std::move(task)(absl::OkStatus());
    absl::MutexLock lock(&mutex_);
    --running_;
  }
}

}  // namespace entrograd::aggregator
