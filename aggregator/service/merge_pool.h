// A fixed set of threads for the aggregator's expensive per-message work
// (decoding a contribution, and merging and encoding the round it
// completes), so that none of it runs on gRPC's callback threads, which
// must not block.
//
// Bounded: at most `threads` tasks run at once; the rest wait in a FIFO
// queue. The service submits at most one task per stream at a time and
// reads nothing more from that stream until its task is done, so the queue
// holds at most one task (and one received message) per live stream: a
// stream whose work waits is not read, which is the back-pressure on its
// worker.
//
// Every submitted task is called exactly once: with OK on a pool thread, or,
// once Stop has begun, with UNAVAILABLE, on the thread that calls Stop (for
// tasks still queued) or the one that calls Submit (for tasks submitted
// later). So a stream waiting on its task always hears back, and shutdown
// never waits on a task that will not run.
//
// Thread safety: all methods are thread-safe. Submit may be called from a
// task; Stop and the destructor must not be.
#ifndef ENTROGRAD_AGGREGATOR_SERVICE_MERGE_POOL_H_
#define ENTROGRAD_AGGREGATOR_SERVICE_MERGE_POOL_H_

#include <deque>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace entrograd::aggregator {

class MergePool {
 public:
  // Called with OK to do its work, or with UNAVAILABLE to give it up.
  using Task = absl::AnyInvocable<void(absl::Status) &&>;

  // Starts `threads` threads; `threads` must be at least 1.
  explicit MergePool(int threads);
  // Stops (see Stop) and joins the threads.
  ~MergePool();

  MergePool(const MergePool&) = delete;
  MergePool& operator=(const MergePool&) = delete;

  // Queues `task` behind those already queued. After Stop has begun, calls
  // `task` with UNAVAILABLE before returning instead.
  void Submit(Task task);

  // Refuses tasks from now on, calls each queued task with UNAVAILABLE (on
  // this thread, in queue order) and waits until the running ones have
  // returned. Idempotent.
  void Stop();

  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  void RunLoop();
  bool IdleLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return running_ == 0;
  }
  bool WorkOrStopLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return stopping_ || !queue_.empty();
  }

  mutable absl::Mutex mutex_;
  std::deque<Task> queue_ ABSL_GUARDED_BY(mutex_);
  int running_ ABSL_GUARDED_BY(mutex_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mutex_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_SERVICE_MERGE_POOL_H_
