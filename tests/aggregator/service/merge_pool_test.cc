// MergePool: bounded (at most `threads` tasks at once, the rest wait in
// order and still run), and every task is called exactly once: with OK on a
// pool thread, or with UNAVAILABLE once the pool stops, so no stream waits
// forever on work that will not run.
#include "aggregator/service/merge_pool.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace entrograd::aggregator {
namespace {

// How long a test waits for an event before failing (never a delay that
// orders events: each wait ends as soon as its condition holds).
constexpr absl::Duration kPatience = absl::Seconds(30);

// Tasks that block until the gate opens, recording how many run at once
// and how each was called.
class GatedTasks {
 public:
  MergePool::Task Make(int id) {
    return [this, id](absl::Status status) {
      {
        absl::MutexLock lock(&mutex_);
        statuses_[id] = status;
        if (!status.ok()) return;
        ++running_;
        max_running_ = std::max(max_running_, running_);
        order_.push_back(id);
      }
      gate_.WaitForNotification();
      absl::MutexLock lock(&mutex_);
      --running_;
      ++completed_;
    };
  }
  void Open() { gate_.Notify(); }
  // Waits until `condition` holds; false after kPatience.
  bool Await(bool (GatedTasks::*condition)() const) {
    absl::MutexLock lock(&mutex_);
    return mutex_.AwaitWithTimeout(absl::Condition(this, condition), kPatience);
  }
  bool TwoRunning() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return running_ == 2;
  }
  bool OneRunning() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return running_ == 1;
  }
  bool SixCompleted() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return completed_ == 6;
  }
  bool TwoCalled() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return statuses_.size() >= 3;  // the running one and two given up
  }

  mutable absl::Mutex mutex_;
  int running_ ABSL_GUARDED_BY(mutex_) = 0;
  int max_running_ ABSL_GUARDED_BY(mutex_) = 0;
  int completed_ ABSL_GUARDED_BY(mutex_) = 0;
  std::vector<int> order_ ABSL_GUARDED_BY(mutex_);
  std::map<int, absl::Status> statuses_ ABSL_GUARDED_BY(mutex_);

 private:
  absl::Notification gate_;
};

TEST(MergePoolTest, AtMostThreadsTasksRunAndTheRestWaitThenComplete) {
  GatedTasks tasks;  // outlives the pool's threads
  MergePool pool(2);
  EXPECT_EQ(pool.threads(), 2);
  for (int id = 0; id < 6; ++id) pool.Submit(tasks.Make(id));
  ASSERT_TRUE(tasks.Await(&GatedTasks::TwoRunning));
  {
    // Both threads are blocked in their tasks, so nothing else can start.
    absl::MutexLock lock(&tasks.mutex_);
    EXPECT_EQ(tasks.statuses_.size(), 2u) << "more tasks started than threads";
  }
  tasks.Open();
  ASSERT_TRUE(tasks.Await(&GatedTasks::SixCompleted));
  absl::MutexLock lock(&tasks.mutex_);
  EXPECT_EQ(tasks.max_running_, 2);
  for (int id = 0; id < 6; ++id) {
    EXPECT_TRUE(tasks.statuses_[id].ok()) << id;
  }
  // First in, first out: the waiting tasks started in the order queued.
  ASSERT_EQ(tasks.order_.size(), 6u);
  EXPECT_EQ(std::vector<int>(tasks.order_.begin() + 2, tasks.order_.end()),
            (std::vector<int>{2, 3, 4, 5}));
}

// Stop gives the queued tasks up at once (UNAVAILABLE) and waits only for
// the running one; a task submitted later is given up before Submit returns.
TEST(MergePoolTest, StopGivesUpQueuedTasksAndWaitsForTheRunningOne) {
  GatedTasks tasks;  // outlives the pool's threads
  MergePool pool(1);
  for (int id = 0; id < 3; ++id) pool.Submit(tasks.Make(id));
  ASSERT_TRUE(tasks.Await(&GatedTasks::OneRunning));
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    pool.Stop();
    stopped = true;
  });
  ASSERT_TRUE(tasks.Await(&GatedTasks::TwoCalled));
  {
    absl::MutexLock lock(&tasks.mutex_);
    EXPECT_EQ(tasks.statuses_[1].code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(tasks.statuses_[2].code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(tasks.running_, 1);
  }
  EXPECT_FALSE(stopped) << "Stop returned while a task still ran";
  tasks.Open();
  stopper.join();
  EXPECT_TRUE(stopped);

  absl::Status late = absl::UnknownError("not called");
  pool.Submit([&late](absl::Status status) { late = std::move(status); });
  EXPECT_EQ(late.code(), absl::StatusCode::kUnavailable);
  pool.Stop();  // idempotent
  absl::MutexLock lock(&tasks.mutex_);
  EXPECT_TRUE(tasks.statuses_[0].ok());
  EXPECT_EQ(tasks.completed_, 1);
}

// A session's task starts the stream's next read, whose callback may submit
// the next update from the same pool thread.
TEST(MergePoolTest, ATaskMaySubmitAnother) {
  absl::Notification second_ran;  // outlives the pool's threads
  MergePool pool(1);
  pool.Submit([&](absl::Status status) {
    ASSERT_TRUE(status.ok());
    pool.Submit([&](absl::Status inner) {
      EXPECT_TRUE(inner.ok());
      second_ran.Notify();
    });
  });
  EXPECT_TRUE(second_ran.WaitForNotificationWithTimeout(kPatience));
}

// The destructor stops and joins: tasks still queued are given up, never
// dropped silently.
TEST(MergePoolTest, DestroyingThePoolCallsEveryTask) {
  std::atomic<int> ok{0};
  std::atomic<int> given_up{0};
  absl::Notification gate;
  absl::Notification first_running;
  std::thread opener;
  {
    MergePool pool(1);
    pool.Submit([&](absl::Status status) {
      first_running.Notify();
      gate.WaitForNotification();
      ++(status.ok() ? ok : given_up);
    });
    for (int i = 0; i < 4; ++i) {
      pool.Submit(
          [&](absl::Status status) { ++(status.ok() ? ok : given_up); });
    }
    ASSERT_TRUE(first_running.WaitForNotificationWithTimeout(kPatience));
    opener = std::thread([&] {
      // Opens the gate once the destructor has given the queued tasks up.
      while (given_up.load() < 4) std::this_thread::yield();
      gate.Notify();
    });
  }
  opener.join();
  EXPECT_EQ(ok.load(), 1);
  EXPECT_EQ(given_up.load(), 4);
}

}  // namespace
}  // namespace entrograd::aggregator
