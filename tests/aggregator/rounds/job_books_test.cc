// The per-job books on hand-built state: every removal returns exactly what
// was counted, merges still running are never released, and abort records
// stay within their bound.
#include "aggregator/rounds/job_books.h"

#include <memory>

#include "aggregator/rounds/memory_accounting.h"
#include "gtest/gtest.h"

namespace entrograd::aggregator {
namespace {

// A job of two ranks with rounds of steps 0..2 in flight (100 bytes each),
// a merged update of step 0 (50 bytes) and one of step 1 still merging,
// counted in `held` as the registry would.
JobState Job(HeldTotals& held) {
  JobState job;
  job.world_size = 2;
  job.members.resize(2);
  job.table_bytes = 1000;
  held.bytes += job.table_bytes;
  for (int64_t step = 0; step < 3; ++step) {
    auto round = std::make_unique<RoundState>();
    round->bytes = 100;
    job.rounds[{step, 0}] = std::move(round);
    held.bytes += 100;
    ++held.rounds_in_flight;
  }
  job.completed[{0, 1}].message = std::make_shared<v1::AggregatorMessage>();
  job.completed[{0, 1}].bytes = 50;
  held.bytes += 50;
  job.completed[{1, 1}];  // merging
  return job;
}

TEST(JobBooksTest, ReleaseAppliedFreesAppliedStepsButNotRunningMerges) {
  HeldTotals held;
  JobState job = Job(held);
  RecordAbort(job, {0, 2}, absl::AbortedError("timeout"), 10, held);
  job.members[0].applied_step = 1;
  job.members[1].applied_step = 1;
  ReleaseApplied(job, held);
  EXPECT_EQ(job.rounds.size(), 1u) << "only step 2 is still needed";
  EXPECT_EQ(job.completed.size(), 1u) << "the running merge stays";
  EXPECT_EQ(job.completed.count({1, 1}), 1u);
  EXPECT_TRUE(job.aborted.empty());
  EXPECT_EQ(job.aborted_bytes, 0);
  EXPECT_EQ(held.rounds_in_flight, 1);
  EXPECT_EQ(held.bytes, 1000 + 100);
  EXPECT_FALSE(JobCanEnd(job)) << "a round and a merge are still there";
}

TEST(JobBooksTest, AbortRecordsAreBoundedOldestFirstAndReplaceable) {
  HeldTotals held;
  JobState job;
  RecordAbort(job, {0, 0}, absl::AbortedError("a"), 2, held);
  RecordAbort(job, {1, 0}, absl::AbortedError("b"), 2, held);
  RecordAbort(job, {1, 0}, absl::AbortedError("longer reason"), 2, held);
  EXPECT_EQ(job.aborted.size(), 2u);
  EXPECT_EQ(job.aborted[RoundKey(1, 0)].message(), "longer reason");
  RecordAbort(job, {2, 0}, absl::AbortedError("c"), 2, held);
  EXPECT_EQ(job.aborted.size(), 2u);
  EXPECT_EQ(job.aborted.count({0, 0}), 0u) << "the oldest is forgotten";
  const int64_t expected =
      AbortRecordBytes(absl::AbortedError("longer reason")) +
      AbortRecordBytes(absl::AbortedError("c"));
  EXPECT_EQ(job.aborted_bytes, expected);
  EXPECT_EQ(held.bytes, expected);
}

// Whatever path a job takes to its end, the totals return to where they
// were before it.
TEST(JobBooksTest, AnEndedJobLeavesNothingCounted) {
  HeldTotals held;
  JobState job = Job(held);
  RecordAbort(job, {5, 0}, absl::AbortedError("x"), 10, held);
  EraseRound(job, {1, 0}, held);
  EraseRound(job, {9, 9}, held);  // not in flight: nothing
  DropRounds(job, held);
  EXPECT_EQ(held.rounds_in_flight, 0);
  EXPECT_FALSE(JobCanEnd(job)) << "the merge of step 1 still runs";
  job.completed[{1, 1}].message = std::make_shared<v1::AggregatorMessage>();
  ASSERT_TRUE(JobCanEnd(job));
  ReleaseJob(job, held);
  EXPECT_EQ(held.bytes, 0);
}

class SilentSink : public StreamSink {
 public:
  void Send(std::shared_ptr<const v1::AggregatorMessage>) override {}
  void Close(const absl::Status&) override {}
};

TEST(JobBooksTest, AJobWithALiveStreamCannotEnd) {
  JobState job;
  job.members.resize(2);
  EXPECT_TRUE(JobCanEnd(job));
  job.members[1].sink = std::make_shared<SilentSink>();
  EXPECT_FALSE(JobCanEnd(job));
}

}  // namespace
}  // namespace entrograd::aggregator
