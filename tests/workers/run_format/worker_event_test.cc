#include "workers/run_format/worker_event.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::run_format {
namespace {

using ::entrograd::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

StepEvent AStep() {
  StepEvent step;
  step.rank = 1;
  step.epoch = 0;
  step.step = 7;
  step.loss = 0.4125;
  step.forward_backward_seconds = 0.03;
  step.compress_seconds = 0.002;
  step.wait_seconds = 0.01;
  step.apply_seconds = 0.001;
  step.step_seconds = 0.05;
  step.params_hash = "00ff00ff00ff00ff";
  step.bytes = {1000, 3000, 400000};
  step.reconnects = 2;
  return step;
}

// One of each event, every field set to something other than its default.
std::vector<WorkerEvent> OneOfEach() {
  StartEvent start;
  start.rank = 0;
  start.world_size = 4;
  start.steps_per_epoch = 234;
  start.total_steps = 468;
  start.first_step = 10;
  start.parameters = 454922;
  start.layers = 8;
  start.policy = "entropy";
  start.model = "cnn";
  start.metrics_port = 9465;
  EvalEvent eval;
  eval.rank = 0;
  eval.step = 100;
  eval.seconds = 12.5;
  eval.train_seconds = 11.25;
  eval.test_accuracy = 0.8125;
  eval.test_loss = 0.5;
  eval.validation_accuracy = 0.75;
  eval.validation_loss = 0.625;
  EpochEvent epoch;
  epoch.rank = 0;
  epoch.epoch = 1;
  epoch.step = 468;
  epoch.test_accuracy = 0.875;
  epoch.test_loss = 0.375;
  DoneEvent done;
  done.rank = 0;
  done.steps = 468;
  done.test_accuracy = 0.875;
  done.test_loss = 0.375;
  done.params_hash = "0123456789abcdef";
  done.seconds = 30.5;
  done.train_seconds = 28.0;
  done.bytes = WireBytes{10, 20, 3000};
  done.reconnects = 1;
  done.layer_shares = {{"conv1.weight", 800, 0.00125, 0.004},
                       {"fc2.bias", 10, 1.0, 1.0}};
  ErrorEvent error;
  error.rank = 3;
  error.code = "ABORTED";
  error.message = "round (step 5, layer 2) aborted: rank(s) 2 missing";
  return {start, AStep(), eval, epoch, done, error};
}

TEST(WorkerEventTest, EveryEventRoundTripsThroughItsLine) {
  for (const WorkerEvent& event : OneOfEach()) {
    const std::string line = FormatWorkerEvent(event);
    SCOPED_TRACE(line);
    EXPECT_EQ(line.find('\n'), std::string::npos) << "one line";
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(WorkerEvent back, ParseWorkerEvent(line));
    EXPECT_EQ(back.index(), event.index());
    // Writing what was read gives the same line: no field is lost or
    // changed on the way.
    EXPECT_EQ(FormatWorkerEvent(back), line);
  }
}

TEST(WorkerEventTest, LinesAreCompactWithTheEventNameFirst) {
  // bench/chaos_soak.py and the process tests look for these spellings.
  const std::string step = FormatWorkerEvent(AStep());
  EXPECT_THAT(step, StartsWith("{\"event\":\"step\",\"rank\":1,"));
  EXPECT_THAT(step, HasSubstr("\"step\":7,"));
  EXPECT_THAT(step, HasSubstr("\"params_hash\":\"00ff00ff00ff00ff\""));
  EXPECT_THAT(FormatWorkerEvent(OneOfEach()[4]),
              StartsWith("{\"event\":\"done\","));
}

TEST(WorkerEventTest, EpochWithoutAnEvaluationHasANullAccuracy) {
  EpochEvent epoch;
  epoch.rank = 0;
  epoch.epoch = 0;
  epoch.step = 30;
  const std::string line = FormatWorkerEvent(epoch);
  EXPECT_THAT(line, HasSubstr("\"test_accuracy\":null")) << line;
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(WorkerEvent back, ParseWorkerEvent(line));
  ASSERT_TRUE(std::holds_alternative<EpochEvent>(back));
  EXPECT_FALSE(std::get<EpochEvent>(back).test_accuracy.has_value());
  EXPECT_FALSE(std::get<EpochEvent>(back).test_loss.has_value());
}

TEST(WorkerEventTest, NanLossRoundTripsAsTheStringNaN) {
  StepEvent diverged = AStep();
  diverged.loss = std::numeric_limits<double>::quiet_NaN();
  const std::string line = FormatWorkerEvent(diverged);
  EXPECT_THAT(line, HasSubstr("\"loss\":\"NaN\","));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(WorkerEvent back, ParseWorkerEvent(line));
  EXPECT_TRUE(std::isnan(std::get<StepEvent>(back).loss));

  for (double infinity : {std::numeric_limits<double>::infinity(),
                          -std::numeric_limits<double>::infinity()}) {
    diverged.loss = infinity;
    const std::string inf_line = FormatWorkerEvent(diverged);
    EXPECT_THAT(inf_line, HasSubstr(infinity > 0 ? "\"loss\":\"Infinity\""
                                                 : "\"loss\":\"-Infinity\""));
    ENTROGRAD_ASSERT_OK_AND_ASSIGN(WorkerEvent inf_back,
                                   ParseWorkerEvent(inf_line));
    EXPECT_EQ(std::get<StepEvent>(inf_back).loss, infinity);
  }
}

TEST(WorkerEventTest, AbsentOptionalValuesAreNull) {
  DoneEvent not_evaluated;
  not_evaluated.rank = 1;
  not_evaluated.steps = 20;
  not_evaluated.params_hash = "x";
  const std::string line = FormatWorkerEvent(not_evaluated);
  EXPECT_THAT(line, HasSubstr("\"test_accuracy\":null,"));
  EXPECT_THAT(line, HasSubstr("\"uplink_wire_bytes\":null,"));
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(WorkerEvent back, ParseWorkerEvent(line));
  const DoneEvent& done = std::get<DoneEvent>(back);
  EXPECT_FALSE(done.test_accuracy.has_value());
  EXPECT_FALSE(done.test_loss.has_value());
  EXPECT_FALSE(done.seconds.has_value());
  EXPECT_FALSE(done.bytes.has_value());
}

TEST(WorkerEventTest, EmitWritesOneFlushedLine) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  EmitWorkerEvent(AStep(), file);
  EmitWorkerEvent(AStep(), file);
  std::rewind(file);
  char buffer[4096] = {};
  const size_t read = std::fread(buffer, 1, sizeof(buffer) - 1, file);
  std::fclose(file);
  const std::string line = FormatWorkerEvent(AStep());
  EXPECT_EQ(std::string(buffer, read), line + "\n" + line + "\n");
}

TEST(WorkerEventTest, ReadsTheMinimalEventsOfOtherWriters) {
  // What a stand-in worker (a shell script in the launcher's tests) prints:
  // only the required members.
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      WorkerEvent start,
      ParseWorkerEvent(R"({"event":"start","rank":1,"world_size":4,)"
                       R"("steps_per_epoch":234,"total_steps":468})"));
  EXPECT_EQ(std::get<StartEvent>(start).steps_per_epoch, 234);
  EXPECT_EQ(std::get<StartEvent>(start).first_step, 0);
  EXPECT_EQ(std::get<StartEvent>(start).metrics_port, 0);

  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      WorkerEvent step,
      ParseWorkerEvent(R"({"event":"step","epoch":0,"step":5,"loss":1.25,)"
                       R"("uplink_wire_bytes":1,"downlink_wire_bytes":2,)"
                       R"("dense_equivalent_bytes":300,"layers":[1,2]})"));
  const StepEvent& s = std::get<StepEvent>(step);
  EXPECT_EQ(s.rank, -1);
  EXPECT_EQ(s.step, 5);
  EXPECT_EQ(s.bytes.wire(), 3);
  EXPECT_DOUBLE_EQ(CompressionRatio(s.bytes), 100);
  EXPECT_EQ(s.step_seconds, 0);

  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      WorkerEvent error,
      ParseWorkerEvent(R"({"event":"error","rank":3,"message":"NaN in fc1"})"));
  EXPECT_EQ(std::get<ErrorEvent>(error).rank, 3);
  EXPECT_EQ(std::get<ErrorEvent>(error).message, "NaN in fc1");
  EXPECT_EQ(std::get<ErrorEvent>(error).code, "");
}

TEST(WorkerEventTest, GarbageIsInvalidArgument) {
  for (const char* line :
       {"", "Loading Fashion-MNIST from /usr/share/datasets", "[1,2,3]",
        "{not json}", "WARNING: {\"event\":\"step\"}", "\x01\x02\xff",
        "{\"event\":\"step\"} trailing", "{\"loss\":NaN}"}) {
    EXPECT_THAT(ParseWorkerEvent(line),
                StatusIs(absl::StatusCode::kInvalidArgument, ""))
        << line;
  }
}

TEST(WorkerEventTest, PartialLinesAreInvalidArgument) {
  const std::string full = FormatWorkerEvent(AStep());
  ENTROGRAD_EXPECT_OK(ParseWorkerEvent(full));
  // Every strict prefix (a line cut off by a crash) is rejected.
  for (size_t length = 0; length < full.size(); ++length) {
    EXPECT_THAT(ParseWorkerEvent(full.substr(0, length)),
                StatusIs(absl::StatusCode::kInvalidArgument, ""))
        << full.substr(0, length);
  }
}

TEST(WorkerEventTest, MissingOrMistypedMembersAreNamed) {
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
  // The loss is required: null is how an absent value reads, not NaN.
  EXPECT_THAT(
      ParseWorkerEvent(R"({"event":"step","epoch":0,"step":1,)"
                       R"("loss":null,"uplink_wire_bytes":1,)"
                       R"("downlink_wire_bytes":1,)"
                       R"("dense_equivalent_bytes":1})"),
      StatusIs(absl::StatusCode::kInvalidArgument, "\"loss\" is missing"));
  EXPECT_THAT(
      ParseWorkerEvent(R"({"event":"step","epoch":0,"step":1,)"
                       R"("loss":"nan","uplink_wire_bytes":1,)"
                       R"("downlink_wire_bytes":1,)"
                       R"("dense_equivalent_bytes":1})"),
      StatusIs(absl::StatusCode::kInvalidArgument, "\"loss\" is not a number"));
  EXPECT_THAT(ParseWorkerEvent(R"({"event":"done","steps":3})"),
              StatusIs(absl::StatusCode::kInvalidArgument, "params_hash"));
}

TEST(WorkerEventTest, LayerSharesAreReadAndCheckedEntryByEntry) {
  const std::string prefix = R"({"event":"done","steps":3,"params_hash":"ab",)";
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      WorkerEvent event,
      ParseWorkerEvent(prefix + R"("layer_shares":[{"name":"w","numel":4,)"
                                R"("sent_share":0.25,"merged_share":0.5}]})"));
  const DoneEvent& done = std::get<DoneEvent>(event);
  ASSERT_EQ(done.layer_shares.size(), 1u);
  EXPECT_EQ(done.layer_shares[0].name, "w");
  EXPECT_EQ(done.layer_shares[0].numel, 4);
  EXPECT_EQ(done.layer_shares[0].sent_share, 0.25);
  EXPECT_EQ(done.layer_shares[0].merged_share, 0.5);
  // Absent (an older worker): none.
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(
      event, ParseWorkerEvent(R"({"event":"done","steps":3,"params_hash":"ab"})"));
  EXPECT_TRUE(std::get<DoneEvent>(event).layer_shares.empty());
  EXPECT_THAT(
      ParseWorkerEvent(prefix + R"("layer_shares":{"w":1}})"),
      StatusIs(absl::StatusCode::kInvalidArgument, "is not an array"));
  EXPECT_THAT(ParseWorkerEvent(prefix + R"("layer_shares":[{"name":"w",)"
                                        R"("numel":0,"sent_share":0,)"
                                        R"("merged_share":0}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "layer_shares[0]: \"numel\" must be >= 1"));
  EXPECT_THAT(ParseWorkerEvent(prefix + R"("layer_shares":[{"name":"w",)"
                                        R"("numel":4,"sent_share":0.5,)"
                                        R"("merged_share":-0.25}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "\"merged_share\" must be in [0, 1]"));
  EXPECT_THAT(ParseWorkerEvent(prefix + R"("layer_shares":[{"name":"w",)"
                                        R"("numel":4,"sent_share":0.5}]})"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "\"merged_share\" is missing"));
}

TEST(WorkerEventTest, UnknownObjectsAreNotFound) {
  EXPECT_THAT(ParseWorkerEvent(R"({"level":"info","msg":"hello"})"),
              StatusIs(absl::StatusCode::kNotFound, "event"));
  EXPECT_THAT(ParseWorkerEvent(R"({"event":"checkpoint","step":100})"),
              StatusIs(absl::StatusCode::kNotFound, "checkpoint"));
}

}  // namespace
}  // namespace entrograd::run_format
