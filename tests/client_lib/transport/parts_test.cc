// The transport's parts on their own: contribution store, merged inbox,
// backoff, parameter hash.
#include <thread>
#include <vector>

#include "entrograd/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "support/thread_state.h"
#include "support/wait_for.h"
#include "transport/backoff.h"
#include "transport/contribution_store.h"
#include "transport/merged_inbox.h"

namespace entrograd::testing {
namespace {

std::shared_ptr<const v1::WorkerMessage> Message(int64_t step, uint32_t layer) {
  auto message = std::make_shared<v1::WorkerMessage>();
  message->mutable_layer_update()->set_step(step);
  message->mutable_layer_update()->set_layer_index(layer);
  return message;
}

TEST(ContributionStoreTest, KeepsTheLastTwoStepsPerLayerAndResendsInStepOrder) {
  ContributionStore store;
  for (int64_t step = 0; step < 4; ++step) {
    for (uint32_t layer : {2u, 0u})
      store.Keep(step, layer, Message(step, layer));
  }
  EXPECT_EQ(store.size(), 4u);
  EXPECT_FALSE(store.Contains(1, 0));
  EXPECT_TRUE(store.Contains(2, 0));
  EXPECT_TRUE(store.Contains(3, 2));
  const auto kept = store.Above(-1);
  ASSERT_EQ(kept.size(), 4u);
  const std::vector<std::pair<int64_t, uint32_t>> order = {
      {2, 0}, {2, 2}, {3, 0}, {3, 2}};
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(std::make_pair(kept[i].step, kept[i].layer), order[i]);
    EXPECT_EQ(kept[i].message->layer_update().step(), order[i].first);
  }
  EXPECT_EQ(store.Above(2).size(), 2u);
  EXPECT_EQ(store.Find(3, 0), kept[2].message);  // the same bytes, shared
  EXPECT_EQ(store.Find(0, 0), nullptr);
}

MergedLayerUpdate Update(int64_t step, uint32_t layer, float value) {
  MergedLayerUpdate update;
  update.step = step;
  update.layer = layer;
  update.payload.numel = 1;
  update.payload.dense = true;
  update.payload.values = {value};
  return update;
}

absl::Time Soon() { return absl::Now() + absl::Seconds(5); }

TEST(MergedInboxTest, EachOutcomeIsReturnedOnceAndDuplicatesAreDropped) {
  MergedInbox inbox(/*applied_step=*/-1);
  EXPECT_TRUE(inbox.Deliver(0, 0, Update(0, 0, 1.0f)));
  EXPECT_FALSE(
      inbox.Deliver(0, 0, Update(0, 0, 2.0f)));  // resend answered again
  EXPECT_FALSE(inbox.Deliver(0, 0, absl::AbortedError("late")));
  EXPECT_FALSE(inbox.Wants(0, 0));
  auto first = inbox.Wait(0, 0, Soon());
  ENTROGRAD_ASSERT_OK(first);
  EXPECT_EQ(first->payload.values[0], 1.0f);
  EXPECT_FALSE(inbox.Deliver(0, 0, Update(0, 0, 3.0f)));
  EXPECT_THAT(
      inbox.Wait(0, 0, Soon()),
      StatusIs(absl::StatusCode::kFailedPrecondition, "already returned"));
  inbox.MarkApplied(0);
  EXPECT_FALSE(inbox.Deliver(0, 1, Update(0, 1, 1.0f)));  // applied step
  EXPECT_THAT(
      inbox.Wait(0, 1, Soon()),
      StatusIs(absl::StatusCode::kFailedPrecondition, "already applied"));
}

TEST(MergedInboxTest, AMergedUpdateReplacesAnErrorNotYetReturned) {
  MergedInbox inbox(-1);
  EXPECT_TRUE(inbox.Deliver(1, 0, absl::OutOfRangeError("too far ahead")));
  EXPECT_TRUE(inbox.Wants(1, 0));
  EXPECT_TRUE(inbox.Deliver(1, 0, Update(1, 0, 4.0f)));
  ENTROGRAD_EXPECT_OK(inbox.Wait(1, 0, Soon()));
  EXPECT_TRUE(inbox.Deliver(2, 0, absl::AbortedError("rank 1 stopped")));
  EXPECT_THAT(inbox.Wait(2, 0, Soon()),
              StatusIs(absl::StatusCode::kAborted, "rank 1"));
}

TEST(MergedInboxTest, WaitBlocksUntilDeliveryFailureOrDeadline) {
  MergedInbox inbox(-1);
  // The other thread delivers (or fails) only once this one sleeps in Wait,
  // so Wait is woken by it rather than finding the outcome there.
  const pid_t waiter = CurrentThreadId();
  std::thread deliverer([&] {
    EXPECT_TRUE(WaitFor([&] { return ThreadIsAsleep(waiter); }));
    inbox.Deliver(0, 3, Update(0, 3, 5.0f));
  });
  auto update = inbox.Wait(0, 3, Soon());
  deliverer.join();
  ENTROGRAD_ASSERT_OK(update);
  EXPECT_EQ(update->layer, 3u);

  const absl::Time start = absl::Now();
  EXPECT_THAT(inbox.Wait(0, 4, absl::Now() + absl::Milliseconds(50)),
              StatusIs(absl::StatusCode::kDeadlineExceeded, "step 0, layer 4"));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(50));

  inbox.Deliver(1, 0, Update(1, 0, 6.0f));
  std::thread failer([&] {
    EXPECT_TRUE(WaitFor([&] { return ThreadIsAsleep(waiter); }));
    inbox.Fail(absl::UnavailableError("shard lost"));
    inbox.Fail(absl::CancelledError("second"));  // the first failure wins
  });
  EXPECT_THAT(inbox.Wait(1, 1, Soon()),
              StatusIs(absl::StatusCode::kUnavailable, "shard lost"));
  failer.join();
  ENTROGRAD_EXPECT_OK(inbox.Wait(1, 0, Soon()));  // received before the failure
  EXPECT_THAT(inbox.fatal(), StatusIs(absl::StatusCode::kUnavailable, ""));
}

TEST(BackoffTest, DoublesUpToTheCapWithinTheJitter) {
  Backoff backoff({absl::Milliseconds(100), absl::Milliseconds(1000), 0.2}, 42);
  const int64_t expected_ms[] = {100, 200, 400, 800, 1000, 1000};
  for (int64_t ms : expected_ms) {
    const absl::Duration delay = backoff.Next();
    EXPECT_GE(delay, absl::Milliseconds(ms) * 0.8);
    EXPECT_LE(delay, absl::Milliseconds(ms) * 1.2);
  }
  backoff.Reset();
  EXPECT_LE(backoff.Next(), absl::Milliseconds(120));
  Backoff exact({absl::Milliseconds(10), absl::Milliseconds(10), 0.0}, 1);
  EXPECT_EQ(exact.Next(), absl::Milliseconds(10));
}

TEST(HashParametersTest, IsFnv1a64OverLittleEndianFloat32Bytes) {
  EXPECT_EQ(HashParameters({}), 0xCBF29CE484222325ull);  // the offset basis
  const std::vector<float> a = {1.0f, -2.5f, 0.0f};
  const std::vector<float> b = {3.25f};
  // Computed independently (Python: struct.pack('<4f', ...), FNV-1a 64).
  EXPECT_EQ(HashParameters({absl::MakeConstSpan(a), absl::MakeConstSpan(b)}),
            0xE7979599F8CCE768ull);
  // The split into spans does not matter, the order does.
  const std::vector<float> all = {1.0f, -2.5f, 0.0f, 3.25f};
  EXPECT_EQ(HashParameters({absl::MakeConstSpan(all)}), 0xE7979599F8CCE768ull);
  EXPECT_NE(HashParameters({absl::MakeConstSpan(b), absl::MakeConstSpan(a)}),
            0xE7979599F8CCE768ull);
}

}  // namespace
}  // namespace entrograd::testing
