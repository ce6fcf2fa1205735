// ReactorSink's ordering rules against a recording StreamWriter: one write in
// flight, Finish exactly once with no write pending and no hold out, and
// Finish on every path, a failed write included (gRPC runs OnDone, and so
// Leave and server shutdown, only after Finish).
#include "aggregator/service/reactor_sink.h"

#include <memory>
#include <string>
#include <vector>

#include "entrograd/wire/grpc_status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace entrograd::aggregator {
namespace {

class RecordingWriter : public StreamWriter {
 public:
  void StartMessageWrite(const v1::AggregatorMessage* message) override {
    writes.push_back(message);
  }
  void FinishStream(const absl::Status& status) override {
    ends.push_back(status);
    finishes.push_back(ToGrpcStatus(status));
  }

  std::vector<const v1::AggregatorMessage*> writes;
  std::vector<absl::Status> ends;  // as given, payloads included
  std::vector<grpc::Status> finishes;  // as gRPC gets them
};

constexpr int64_t kNoBound = int64_t{1} << 40;

std::shared_ptr<const v1::AggregatorMessage> Merged(int64_t step) {
  auto message = std::make_shared<v1::AggregatorMessage>();
  message->mutable_merged_layer()->set_step(step);
  return message;
}

TEST(ReactorSinkTest, WritesOneMessageAtATimeInOrder) {
  RecordingWriter writer;
  ReactorSink sink(&writer, kNoBound);
  auto first = Merged(1);
  auto second = Merged(2);
  sink.Send(first);
  sink.Send(second);
  ASSERT_EQ(writer.writes.size(), 1u)
      << "a second write while one is in flight";
  EXPECT_EQ(writer.writes[0], first.get());
  sink.WriteDone(true);
  ASSERT_EQ(writer.writes.size(), 2u);
  EXPECT_EQ(writer.writes[1], second.get());
  EXPECT_TRUE(writer.finishes.empty());
}

TEST(ReactorSinkTest, CloseDuringAWriteFinishesAfterTheQueueDrains) {
  RecordingWriter writer;
  ReactorSink sink(&writer, kNoBound);
  sink.Send(Merged(1));
  sink.Send(Merged(2));
  sink.Close(WithStreamEndReason(absl::AbortedError("replaced"),
                                 v1::STREAM_END_REASON_RANK_REPLACED));
  EXPECT_TRUE(writer.finishes.empty()) << "Finish with a write pending";
  sink.WriteDone(true);
  EXPECT_TRUE(writer.finishes.empty());
  sink.WriteDone(true);
  ASSERT_EQ(writer.finishes.size(), 1u);
  EXPECT_EQ(writer.finishes[0].error_code(), grpc::StatusCode::ABORTED);
  EXPECT_EQ(StreamEndReasonOf(writer.ends[0]),
            v1::STREAM_END_REASON_RANK_REPLACED)
      << "the end reason reaches the reactor, which sends it as metadata";
  EXPECT_EQ(writer.writes.size(), 2u);
}

// A shutdown hang once came from this: the worker half-closed (Close deferred behind
// the in-flight write), then the write failed. The stream must still finish.
TEST(ReactorSinkTest, ADeferredCloseStillFinishesWhenTheWriteFails) {
  RecordingWriter writer;
  ReactorSink sink(&writer, kNoBound);
  sink.Send(Merged(1));
  sink.Send(Merged(2));
  sink.Close(absl::OkStatus());
  sink.WriteDone(false);
  ASSERT_EQ(writer.finishes.size(), 1u) << "the stream was never finished";
  EXPECT_TRUE(writer.finishes[0].ok()) << "the deferred status is the one sent";
  EXPECT_EQ(writer.writes.size(), 1u) << "nothing is written after a failure";
}

TEST(ReactorSinkTest, AFailedWriteFinishesTheStreamOnce) {
  RecordingWriter writer;
  ReactorSink sink(&writer, kNoBound);
  sink.Send(Merged(1));
  sink.Send(Merged(2));
  sink.WriteDone(false);
  ASSERT_EQ(writer.finishes.size(), 1u);
  EXPECT_EQ(writer.finishes[0].error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_THAT(writer.finishes[0].error_message(),
              ::testing::HasSubstr("writing to the worker failed"));
  // Whatever comes later (the read side failing, the registry) is dropped.
  sink.Close(absl::OkStatus());
  sink.Send(Merged(3));
  EXPECT_EQ(writer.finishes.size(), 1u);
  EXPECT_EQ(writer.writes.size(), 1u);
}

TEST(ReactorSinkTest, NothingReachesTheWriterAfterDetach) {
  RecordingWriter writer;
  ReactorSink sink(&writer, kNoBound);
  sink.Send(Merged(1));
  sink.Detach();
  sink.WriteDone(false);
  sink.Send(Merged(2));
  sink.Close(absl::AbortedError("late"));
  EXPECT_EQ(writer.writes.size(), 1u);
  EXPECT_TRUE(writer.finishes.empty());
}

TEST(ReactorSinkTest, CloseWithNothingInFlightFinishesAtOnceAndOnlyOnce) {
  RecordingWriter writer;
  ReactorSink sink(&writer, kNoBound);
  sink.Close(absl::UnavailableError("draining"));
  sink.Close(absl::AbortedError("again"));
  sink.Send(Merged(1));
  ASSERT_EQ(writer.finishes.size(), 1u);
  EXPECT_EQ(writer.finishes[0].error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(writer.writes.empty());
}

// A merged update of about `bytes` encoded bytes.
std::shared_ptr<const v1::AggregatorMessage> MergedOfSize(int64_t step,
                                                          size_t bytes) {
  auto message = std::make_shared<v1::AggregatorMessage>();
  message->mutable_merged_layer()->set_step(step);
  message->mutable_merged_layer()->mutable_payload()->set_value_bytes(
      std::string(bytes, 'v'));
  return message;
}

// A worker that stops reading: its write never completes while rounds keep
// completing. The queue must not grow without bound: past the bound the
// queued messages are dropped and the stream ends with RESOURCE_EXHAUSTED
// once the write in flight is done.
TEST(ReactorSinkTest, ASlowReaderPastTheQueueBoundIsEndedWithResourceExhausted) {
  RecordingWriter writer;
  const int64_t message_bytes =
      static_cast<int64_t>(MergedOfSize(0, 1000)->ByteSizeLong());
  ReactorSink sink(&writer, 3 * message_bytes);
  for (int64_t step = 0; step < 3; ++step) sink.Send(MergedOfSize(step, 1000));
  EXPECT_TRUE(writer.finishes.empty()) << "within the bound";
  sink.Send(MergedOfSize(3, 1000));  // the fourth does not fit
  EXPECT_TRUE(writer.finishes.empty()) << "Finish with a write pending";
  for (int64_t step = 4; step < 100; ++step) sink.Send(MergedOfSize(step, 1000));
  sink.WriteDone(true);  // the write in flight ends: now Finish
  ASSERT_EQ(writer.finishes.size(), 1u);
  EXPECT_EQ(writer.finishes[0].error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(writer.finishes[0].error_message(),
              ::testing::HasSubstr("--max_stream_queue_bytes"));
  EXPECT_EQ(writer.writes.size(), 1u) << "the queued messages were dropped";
}

// One message always fits into an empty queue, even above the bound, so a
// bound below the largest message cannot end every stream.
TEST(ReactorSinkTest, OneMessageAlwaysFitsAnEmptyQueue) {
  RecordingWriter writer;
  ReactorSink sink(&writer, 10);
  sink.Send(MergedOfSize(0, 1000));
  sink.WriteDone(true);
  sink.Send(MergedOfSize(1, 1000));
  EXPECT_EQ(writer.writes.size(), 2u);
  EXPECT_TRUE(writer.finishes.empty());
}

// --- Holds: a stream's update in the merge pool keeps it open ---

// The update is queued or running while the rank is replaced: the stream
// must not finish (gRPC would then run OnDone and delete the reactor) until
// the pool task releases it, and then exactly once.
TEST(ReactorSinkTest, CloseDuringAHoldFinishesAtTheLastRelease) {
  RecordingWriter writer;
  ReactorSink sink(&writer, kNoBound);
  sink.Hold();
  sink.Hold();  // the task started the next read, whose update is queued
  sink.Close(absl::AbortedError("replaced"));
  EXPECT_TRUE(sink.Closing());
  EXPECT_TRUE(writer.finishes.empty()) << "finished under a hold";
  sink.Release();
  EXPECT_TRUE(writer.finishes.empty()) << "finished under the second hold";
  sink.Release();
  ASSERT_EQ(writer.finishes.size(), 1u);
  EXPECT_EQ(writer.finishes[0].error_code(), grpc::StatusCode::ABORTED);
}

// Writes and holds both defer the finish: it comes when the last of them
// ends, whichever that is.
TEST(ReactorSinkTest, AFinishWaitsForBothTheWriteInFlightAndTheHold) {
  RecordingWriter writer;
  ReactorSink sink(&writer, kNoBound);
  sink.Send(Merged(1));
  sink.Hold();
  sink.Close(absl::OkStatus());
  sink.Release();
  EXPECT_TRUE(writer.finishes.empty()) << "Finish with a write pending";
  sink.WriteDone(true);
  EXPECT_EQ(writer.finishes.size(), 1u);

  RecordingWriter writer2;
  ReactorSink sink2(&writer2, kNoBound);
  sink2.Send(Merged(1));
  sink2.Hold();
  sink2.Close(absl::OkStatus());
  sink2.WriteDone(true);
  EXPECT_TRUE(writer2.finishes.empty()) << "Finish under a hold";
  sink2.Release();
  EXPECT_EQ(writer2.finishes.size(), 1u);
}

// A write fails while the pool works on the stream's update: the failure's
// finish waits for the hold too, and comes (CANCELLED) when it is released,
// so a broken stream still finishes and shutdown cannot hang on it.
TEST(ReactorSinkTest, AFailedWriteUnderAHoldFinishesAtTheRelease) {
  RecordingWriter writer;
  ReactorSink sink(&writer, kNoBound);
  sink.Send(Merged(1));
  sink.Hold();
  sink.WriteDone(false);
  EXPECT_TRUE(writer.finishes.empty());
  EXPECT_TRUE(sink.Closing()) << "reading on is pointless";
  sink.Send(Merged(2));  // the task's RoundError: dropped
  sink.Release();
  ASSERT_EQ(writer.finishes.size(), 1u);
  EXPECT_EQ(writer.finishes[0].error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(writer.writes.size(), 1u);
}

TEST(ReactorSinkTest, AHoldWithoutAFinishChangesNothing) {
  RecordingWriter writer;
  ReactorSink sink(&writer, kNoBound);
  sink.Hold();
  sink.Send(Merged(1));
  EXPECT_EQ(writer.writes.size(), 1u) << "holds do not delay writes";
  sink.Release();
  EXPECT_FALSE(sink.Closing());
  EXPECT_TRUE(writer.finishes.empty());
}

}  // namespace
}  // namespace entrograd::aggregator
