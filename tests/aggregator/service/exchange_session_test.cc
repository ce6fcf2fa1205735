// ExchangeSession without a network: a recording reader and writer stand in
// for the gRPC reactor, a real JobRegistry and MergePool do the work. What
// is checked is the back-pressure (a stream's next read starts only when the
// pool has done its update) and that a stream waiting on the pool still
// ends: closed meanwhile, or given up when the pool stops.
#include "aggregator/service/exchange_session.h"

#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "aggregator/support/random_updates.h"
#include "aggregator/support/sparse_vector.h"
#include "aggregator/support/test_worker.h"
#include "entrograd/wire/grpc_status.h"
#include "gtest/gtest.h"

namespace entrograd::testing {
namespace {

using aggregator::ExchangeSession;
using aggregator::JobRegistry;
using aggregator::MergePool;
using aggregator::ReactorSink;

constexpr uint64_t kNumel = 5000;
constexpr absl::Duration kPatience = absl::Seconds(30);

// The reactor's side: counts reads started and what reaches the stream.
// Writes complete at once, as on a fast network.
class RecordingStream : public aggregator::StreamReader,
                        public aggregator::StreamWriter {
 public:
  void set_sink(ReactorSink* sink) { sink_ = sink; }

  void StartMessageRead(v1::WorkerMessage* message) override {
    absl::MutexLock lock(&mutex_);
    ++reads_;
    target_ = message;
  }
  void StartMessageWrite(const v1::AggregatorMessage* message) override {
    {
      absl::MutexLock lock(&mutex_);
      written_.push_back(*message);
    }
    sink_->WriteDone(true);
  }
  void FinishStream(const absl::Status& status) override {
    absl::MutexLock lock(&mutex_);
    finishes_.push_back(ToGrpcStatus(status));
  }

  // Completes the read in flight with `message` (the caller then calls the
  // session's OnReadDone, as gRPC would).
  void Deliver(const v1::WorkerMessage& message) {
    absl::MutexLock lock(&mutex_);
    *target_ = message;
  }
  int reads() {
    absl::MutexLock lock(&mutex_);
    return reads_;
  }
  bool AwaitReads(int reads) {
    absl::MutexLock lock(&mutex_);
    awaited_reads_ = reads;
    return mutex_.AwaitWithTimeout(
        absl::Condition(this, &RecordingStream::ReadsReachedLocked), kPatience);
  }
  bool AwaitFinish() {
    absl::MutexLock lock(&mutex_);
    return mutex_.AwaitWithTimeout(
        absl::Condition(this, &RecordingStream::FinishedLocked), kPatience);
  }
  std::vector<grpc::Status> finishes() {
    absl::MutexLock lock(&mutex_);
    return finishes_;
  }
  std::vector<v1::AggregatorMessage> written() {
    absl::MutexLock lock(&mutex_);
    return written_;
  }

 private:
  bool ReadsReachedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return reads_ >= awaited_reads_;
  }
  bool FinishedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_) {
    return !finishes_.empty();
  }

  ReactorSink* sink_ = nullptr;
  mutable absl::Mutex mutex_;
  int reads_ ABSL_GUARDED_BY(mutex_) = 0;
  v1::WorkerMessage* target_ ABSL_GUARDED_BY(mutex_) = nullptr;
  std::vector<v1::AggregatorMessage> written_ ABSL_GUARDED_BY(mutex_);
  std::vector<grpc::Status> finishes_ ABSL_GUARDED_BY(mutex_);
  int awaited_reads_ ABSL_GUARDED_BY(mutex_) = 0;
};

v1::WorkerMessage JoinMessage(uint32_t rank, uint32_t world_size) {
  JoinSpec spec;
  spec.job_id = "session";
  spec.rank = rank;
  spec.world_size = world_size;
  spec.layers = {{"w", kNumel}};
  v1::WorkerMessage message;
  *message.mutable_join() = MakeJoin(spec);
  return message;
}

v1::WorkerMessage UpdateMessage(int64_t step, uint32_t seed) {
  v1::WorkerMessage message;
  *message.mutable_layer_update() =
      MakeUpdate(step, 0, EncodeOrDie(RandomSparse(kNumel, 50, seed)));
  return message;
}

class ExchangeSessionTest : public ::testing::Test {
 protected:
  ExchangeSessionTest()
      : registry_(aggregator::RegistryOptions{}, /*metrics=*/nullptr),
        pool_(1),
        sink_(std::make_shared<ReactorSink>(&stream_, int64_t{1} << 30)),
        session_(&stream_, sink_, &registry_, &pool_,
                 aggregator::AggregatorMetrics::Null()) {
    stream_.set_sink(sink_.get());
  }
  ~ExchangeSessionTest() override {
    // The reactor's OnDone.
    sink_->Detach();
    session_.End();
  }

  // Starts the session and joins rank 0 of a job of `world_size` ranks.
  void StartAndJoin(uint32_t world_size) {
    session_.Start(std::nullopt);
    ASSERT_EQ(stream_.reads(), 1);
    stream_.Deliver(JoinMessage(0, world_size));
    session_.OnReadDone(true);
    ASSERT_EQ(stream_.reads(), 2) << "a Join is handled at once";
    ASSERT_EQ(registry_.ActiveStreams(), 1);
  }

  // Occupies the pool's only thread until the returned gate opens.
  std::shared_ptr<absl::Notification> BlockThePool() {
    auto gate = std::make_shared<absl::Notification>();
    auto running = std::make_shared<absl::Notification>();
    pool_.Submit([gate, running](absl::Status) {
      running->Notify();
      gate->WaitForNotification();
    });
    EXPECT_TRUE(running->WaitForNotificationWithTimeout(kPatience));
    return gate;
  }

  RecordingStream stream_;
  JobRegistry registry_;
  MergePool pool_;
  std::shared_ptr<ReactorSink> sink_;
  ExchangeSession session_;
};

// The back-pressure: while the stream's update waits for a pool thread, the
// stream is not read, so each stream has at most one message queued.
TEST_F(ExchangeSessionTest, TheNextReadStartsOnlyWhenTheUpdatesWorkIsDone) {
  StartAndJoin(/*world_size=*/2);
  std::shared_ptr<absl::Notification> gate = BlockThePool();
  stream_.Deliver(UpdateMessage(0, 1));
  session_.OnReadDone(true);
  // The pool's only thread is blocked, so the update cannot have run.
  EXPECT_EQ(stream_.reads(), 2) << "read on while the update was queued";
  EXPECT_EQ(registry_.RoundsInFlight(), 0) << "worked on the callback thread";

  gate->Notify();
  ASSERT_TRUE(stream_.AwaitReads(3));
  EXPECT_EQ(registry_.RoundsInFlight(), 1) << "read on before the work";
  EXPECT_TRUE(stream_.finishes().empty());
}

// A round the update completes is merged and delivered by the pool task,
// before the next read starts.
TEST_F(ExchangeSessionTest, TheMergeRunsOnThePoolBeforeTheNextRead) {
  StartAndJoin(/*world_size=*/1);
  std::shared_ptr<absl::Notification> gate = BlockThePool();
  stream_.Deliver(UpdateMessage(0, 2));
  session_.OnReadDone(true);
  EXPECT_EQ(stream_.written().size(), 1u) << "merged on the callback thread";
  gate->Notify();
  ASSERT_TRUE(stream_.AwaitReads(3));
  const std::vector<v1::AggregatorMessage> written = stream_.written();
  ASSERT_EQ(written.size(), 2u);
  EXPECT_TRUE(written[0].has_join_ack());
  ASSERT_TRUE(written[1].has_merged_layer()) << written[1].ShortDebugString();
  EXPECT_EQ(written[1].merged_layer().contributors(), 1u);
}

// The rank is replaced while its update waits in the pool: the stream must
// not finish (gRPC would delete the reactor under the task) until the task
// is done, and the task then reads no more.
TEST_F(ExchangeSessionTest, AStreamClosedWhileItsUpdateWaitsFinishesAfterIt) {
  StartAndJoin(/*world_size=*/2);
  std::shared_ptr<absl::Notification> gate = BlockThePool();
  stream_.Deliver(UpdateMessage(0, 3));
  session_.OnReadDone(true);
  sink_->Close(absl::AbortedError("rank 0 was replaced"));
  EXPECT_TRUE(stream_.finishes().empty()) << "finished with its work queued";

  gate->Notify();
  ASSERT_TRUE(stream_.AwaitFinish());
  const std::vector<grpc::Status> finishes = stream_.finishes();
  ASSERT_EQ(finishes.size(), 1u);
  EXPECT_EQ(finishes[0].error_code(), grpc::StatusCode::ABORTED);
  EXPECT_EQ(stream_.reads(), 2) << "read on from a closed stream";
}

// Shutdown: the pool stops with the update still queued. The stream ends
// with UNAVAILABLE (retryable: the worker resends elsewhere) instead of
// waiting forever, and grpc::Server::Shutdown can finish.
TEST_F(ExchangeSessionTest, AnUpdateQueuedWhenThePoolStopsEndsTheStream) {
  StartAndJoin(/*world_size=*/2);
  std::shared_ptr<absl::Notification> gate = BlockThePool();
  stream_.Deliver(UpdateMessage(0, 4));
  session_.OnReadDone(true);
  std::thread stopper([this] { pool_.Stop(); });
  ASSERT_TRUE(stream_.AwaitFinish());
  gate->Notify();
  stopper.join();
  const std::vector<grpc::Status> finishes = stream_.finishes();
  ASSERT_EQ(finishes.size(), 1u);
  EXPECT_EQ(finishes[0].error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(stream_.reads(), 2);
  EXPECT_EQ(registry_.RoundsInFlight(), 0) << "the given-up update ran";
}

// After the pool stopped, an update read later is given up at once, on
// the reading thread.
TEST_F(ExchangeSessionTest, AnUpdateReadAfterThePoolStoppedEndsTheStream) {
  StartAndJoin(/*world_size=*/2);
  pool_.Stop();
  stream_.Deliver(UpdateMessage(0, 5));
  session_.OnReadDone(true);
  const std::vector<grpc::Status> finishes = stream_.finishes();
  ASSERT_EQ(finishes.size(), 1u);
  EXPECT_EQ(finishes[0].error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(stream_.reads(), 2);
}

}  // namespace
}  // namespace entrograd::testing
