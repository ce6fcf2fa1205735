#include "workers/launcher/worker_events.h"

#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"
#include "workers/launcher/line_buffer.h"

namespace entrograd::launcher {
namespace {

using ::entrograd::testing::StatusIs;

TEST(WorkerEventsTest, ParsesStart) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      WorkerEvent event,
      ParseWorkerEvent(
          R"({"event":"start","rank":1,"world_size":4,)"
          R"("steps_per_epoch":234,"total_steps":468,)"
          R"("parameters":421642,"layers":8,"policy":"entropy"})"));
  const auto* start = std::get_if<StartEvent>(&event);
  ASSERT_NE(start, nullptr);
  EXPECT_EQ(start->rank, 1);
  EXPECT_EQ(start->world_size, 4);
  EXPECT_EQ(start->steps_per_epoch, 234);
  EXPECT_EQ(start->total_steps, 468);
  EXPECT_EQ(start->parameters, 421642);
  EXPECT_EQ(start->layers, 8);
  EXPECT_EQ(start->first_step, 0);
}

TEST(WorkerEventsTest, ParsesStepIgnoringUnknownKeys) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      WorkerEvent event,
      ParseWorkerEvent(
          R"({"event":"step","rank":0,"epoch":1,"step":300,"loss":0.4125,)"
          R"("uplink_wire_bytes":1000,"downlink_wire_bytes":3000,)"
          R"("dense_equivalent_bytes":400000,"compress_seconds":0.002,)"
          R"("wait_seconds":0.01,"step_seconds":0.05,"params_hash":"ab12",)"
          R"("reconnects":0,"layers":[1,2]})"));
  const auto* step = std::get_if<StepEvent>(&event);
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->epoch, 1);
  EXPECT_EQ(step->step, 300);
  EXPECT_DOUBLE_EQ(step->loss, 0.4125);
  EXPECT_EQ(step->bytes.uplink, 1000);
  EXPECT_EQ(step->bytes.downlink, 3000);
  EXPECT_EQ(step->bytes.dense_equivalent, 400000);
  EXPECT_EQ(step->bytes.wire(), 4000);
  EXPECT_DOUBLE_EQ(CompressionRatio(step->bytes), 100);
  EXPECT_DOUBLE_EQ(step->compress_seconds, 0.002);
  EXPECT_DOUBLE_EQ(step->wait_seconds, 0.01);
  EXPECT_DOUBLE_EQ(step->step_seconds, 0.05);
}

TEST(WorkerEventsTest, DivergedLossIsNan) {
  for (const char* loss : {"null", "NaN"}) {
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(
        WorkerEvent event,
        ParseWorkerEvent(std::string(R"({"event":"step","epoch":0,"step":1,)"
                                     R"("loss":)") +
                         loss +
                         R"(,"uplink_wire_bytes":1,"downlink_wire_bytes":1,)"
                         R"("dense_equivalent_bytes":8})"));
    EXPECT_TRUE(std::isnan(std::get<StepEvent>(event).loss)) << loss;
  }
}

TEST(WorkerEventsTest, ParsesEpochDoneAndError) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      WorkerEvent epoch,
      ParseWorkerEvent(R"({"event":"epoch","rank":0,"epoch":0,"step":234,)"
                       R"("test_accuracy":0.8512,"test_loss":0.41})"));
  EXPECT_DOUBLE_EQ(std::get<EpochEvent>(epoch).test_accuracy, 0.8512);
  EXPECT_EQ(std::get<EpochEvent>(epoch).test_loss, 0.41);

  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      WorkerEvent done,
      ParseWorkerEvent(
          R"({"event":"done","rank":0,"steps":20,)"
          R"("test_accuracy":0.7,"params_hash":"0123abcd",)"
          R"("seconds":3.5,"uplink_wire_bytes":10,)"
          R"("downlink_wire_bytes":20,"dense_equivalent_bytes":3000})"));
  const DoneEvent& d = std::get<DoneEvent>(done);
  EXPECT_EQ(d.steps, 20);
  EXPECT_EQ(d.test_accuracy, 0.7);
  EXPECT_EQ(d.params_hash, "0123abcd");
  EXPECT_EQ(d.seconds, 3.5);
  ASSERT_TRUE(d.bytes.has_value());
  EXPECT_EQ(d.bytes->wire(), 30);

  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      WorkerEvent error,
      ParseWorkerEvent(R"({"event":"error","rank":3,"message":"NaN in fc1"})"));
  EXPECT_EQ(std::get<ErrorEvent>(error).rank, 3);
  EXPECT_EQ(std::get<ErrorEvent>(error).message, "NaN in fc1");
}

TEST(WorkerEventsTest, NegativeAccuracyInDoneMeansNotEvaluated) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      WorkerEvent done,
      ParseWorkerEvent(
          R"({"event":"done","rank":1,"steps":20,)"
          R"("test_accuracy":-1,"test_loss":-1,"params_hash":"x"})"));
  EXPECT_FALSE(std::get<DoneEvent>(done).test_accuracy.has_value());
  EXPECT_FALSE(std::get<DoneEvent>(done).test_loss.has_value());
  EXPECT_FALSE(std::get<DoneEvent>(done).bytes.has_value());
}

TEST(WorkerEventsTest, GarbageIsInvalidArgument) {
  for (const char* line :
       {"", "Loading Fashion-MNIST from /usr/share/datasets", "[1,2,3]",
        "{not json}", "WARNING: {\"event\":\"step\"}", "\x01\x02\xff"}) {
    EXPECT_THAT(ParseWorkerEvent(line),
                StatusIs(absl::StatusCode::kInvalidArgument, ""))
        << line;
  }
}

TEST(WorkerEventsTest, PartialLinesAreInvalidArgument) {
  const std::string full =
      R"({"event":"step","rank":0,"epoch":0,"step":5,"loss":1.25,)"
      R"("uplink_wire_bytes":1,"downlink_wire_bytes":2,)"
      R"("dense_equivalent_bytes":300})";
  ENTROGRAD_EXPECT_OK(ParseWorkerEvent(full));
  // Every strict prefix (a line cut off by a crash) is rejected.
  for (size_t length = 0; length < full.size(); ++length) {
    EXPECT_THAT(ParseWorkerEvent(full.substr(0, length)),
                StatusIs(absl::StatusCode::kInvalidArgument, ""))
        << full.substr(0, length);
  }
}

TEST(WorkerEventsTest, MissingOrMistypedKeysAreNamed) {
  EXPECT_THAT(ParseWorkerEvent(R"({"event":"start","rank":0,"total_steps":5})"),
              StatusIs(absl::StatusCode::kInvalidArgument, "steps_per_epoch"));
  EXPECT_THAT(
      ParseWorkerEvent(R"({"event":"step","epoch":0,"step":"one","loss":1,)"
                       R"("uplink_wire_bytes":1,"downlink_wire_bytes":1,)"
                       R"("dense_equivalent_bytes":1})"),
      StatusIs(absl::StatusCode::kInvalidArgument, "\"step\" is not a number"));
  EXPECT_THAT(ParseWorkerEvent(R"({"event":"step","epoch":0,"step":1.5,)"
                               R"("loss":1,"uplink_wire_bytes":1,)"
                               R"("downlink_wire_bytes":1,)"
                               R"("dense_equivalent_bytes":1})"),
              StatusIs(absl::StatusCode::kInvalidArgument, "not an integer"));
  EXPECT_THAT(ParseWorkerEvent(R"({"event":"step","epoch":0,"step":1,)"
                               R"("loss":1,"uplink_wire_bytes":-1,)"
                               R"("downlink_wire_bytes":1,)"
                               R"("dense_equivalent_bytes":1})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "\"uplink_wire_bytes\" must be >= 0"));
  EXPECT_THAT(ParseWorkerEvent(R"({"event":"done","steps":3})"),
              StatusIs(absl::StatusCode::kInvalidArgument, "params_hash"));
}

TEST(WorkerEventsTest, UnknownObjectsAreNotFound) {
  EXPECT_THAT(ParseWorkerEvent(R"({"level":"info","msg":"hello"})"),
              StatusIs(absl::StatusCode::kNotFound, "event"));
  EXPECT_THAT(ParseWorkerEvent(R"({"event":"checkpoint","step":100})"),
              StatusIs(absl::StatusCode::kNotFound, "checkpoint"));
}

TEST(LineBufferTest, SplitsChunksIntoLines) {
  LineBuffer buffer;
  std::string line;
  buffer.Append("{\"event\":");
  EXPECT_FALSE(buffer.NextLine(&line));  // a partial line waits
  buffer.Append("\"start\"}\r\nsecond\n\nthi");
  ASSERT_TRUE(buffer.NextLine(&line));
  EXPECT_EQ(line, "{\"event\":\"start\"}");
  ASSERT_TRUE(buffer.NextLine(&line));
  EXPECT_EQ(line, "second");
  ASSERT_TRUE(buffer.NextLine(&line));
  EXPECT_EQ(line, "");
  EXPECT_FALSE(buffer.NextLine(&line));
  buffer.Append("rd");
  ASSERT_TRUE(buffer.TakeRest(&line));  // end of stream: the rest is a line
  EXPECT_EQ(line, "third");
  EXPECT_FALSE(buffer.TakeRest(&line));
}

TEST(LineBufferTest, CutsOverlongLines) {
  LineBuffer buffer(/*max_line_bytes=*/4);
  std::string line;
  buffer.Append("abcdefghij\nxy\n");
  std::vector<std::string> lines;
  while (buffer.NextLine(&line)) lines.push_back(line);
  EXPECT_THAT(lines, ::testing::ElementsAre("abcd", "efgh", "ij", "xy"));
}

TEST(LineBufferTest, ManySmallAppendsStayCorrect) {
  LineBuffer buffer;
  std::string line;
  std::vector<std::string> lines;
  const std::string text = "line one\nline two\nline three\n";
  for (int round = 0; round < 100; ++round) {
    for (char c : text) {
      buffer.Append(std::string(1, c));
      while (buffer.NextLine(&line)) lines.push_back(line);
    }
  }
  ASSERT_EQ(lines.size(), 300u);
  EXPECT_EQ(lines[299], "line three");
}

}  // namespace
}  // namespace entrograd::launcher
