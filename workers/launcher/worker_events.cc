#include "workers/launcher/worker_events.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "workers/launcher/flat_json.h"

namespace entrograd::launcher {

namespace {

// Typed reads of one event's keys; the first error is kept and names the
// key, so a worker bug is reported precisely.
class EventReader {
 public:
  EventReader(const FlatJsonObject& object, absl::string_view event)
      : object_(object), event_(event) {}

  double Number(absl::string_view key) {
    const JsonValue* value = Find(key, JsonValue::Type::kNumber, true);
    return value ? value->number : 0;
  }
  // A number that may be null (how JSON writers spell NaN): NaN then. The
  // key itself is required.
  double NumberOrNull(absl::string_view key) {
    auto it = object_.find(key);
    if (it != object_.end() && it->second.type == JsonValue::Type::kNull) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    return Number(key);
  }
  std::optional<double> OptionalNumber(absl::string_view key) {
    const JsonValue* value = Find(key, JsonValue::Type::kNumber, false);
    if (value == nullptr) return std::nullopt;
    return value->number;
  }
  int64_t Integer(absl::string_view key) {
    const JsonValue* value = Find(key, JsonValue::Type::kNumber, true);
    return value ? ToInteger(key, value->number) : 0;
  }
  int64_t OptionalInteger(absl::string_view key, int64_t absent) {
    const JsonValue* value = Find(key, JsonValue::Type::kNumber, false);
    return value ? ToInteger(key, value->number) : absent;
  }
  std::string String(absl::string_view key) {
    const JsonValue* value = Find(key, JsonValue::Type::kString, true);
    return value ? value->string : std::string();
  }
  std::optional<std::string> OptionalString(absl::string_view key) {
    const JsonValue* value = Find(key, JsonValue::Type::kString, false);
    if (value == nullptr) return std::nullopt;
    return value->string;
  }
  bool Has(absl::string_view key) const {
    auto it = object_.find(key);
    return it != object_.end() && it->second.type != JsonValue::Type::kNull;
  }
  void Require(bool condition, absl::string_view key,
               absl::string_view requirement) {
    if (!condition && status_.ok()) {
      status_ = absl::InvalidArgumentError(absl::StrCat(
          "\"", event_, "\" event: \"", key, "\" must be ", requirement));
    }
  }
  const absl::Status& status() const { return status_; }

 private:
  // The value of `key` if present with `type`. A missing required key, or a
  // present key of another type (null counts as absent), records an error.
  const JsonValue* Find(absl::string_view key, JsonValue::Type type,
                        bool required) {
    auto it = object_.find(key);
    if (it == object_.end() || it->second.type == JsonValue::Type::kNull) {
      if (required) Fail(key, "is missing");
      return nullptr;
    }
    if (it->second.type != type) {
      Fail(key, type == JsonValue::Type::kNumber ? "is not a number"
                                                 : "is not a string");
      return nullptr;
    }
    return &it->second;
  }

  int64_t ToInteger(absl::string_view key, double number) {
    if (!std::isfinite(number) || number != std::trunc(number) ||
        std::fabs(number) > 9007199254740992.0) {
      Fail(key, "is not an integer");
      return 0;
    }
    return static_cast<int64_t>(number);
  }

  void Fail(absl::string_view key, absl::string_view what) {
    if (status_.ok()) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat("\"", event_, "\" event: \"", key, "\" ", what));
    }
  }

  const FlatJsonObject& object_;
  absl::string_view event_;
  absl::Status status_;
};

WireBytes ReadBytes(EventReader& reader) {
  WireBytes bytes;
  bytes.uplink = reader.Integer("uplink_wire_bytes");
  bytes.downlink = reader.Integer("downlink_wire_bytes");
  bytes.dense_equivalent = reader.Integer("dense_equivalent_bytes");
  reader.Require(bytes.uplink >= 0, "uplink_wire_bytes", ">= 0");
  reader.Require(bytes.downlink >= 0, "downlink_wire_bytes", ">= 0");
  reader.Require(bytes.dense_equivalent >= 0, "dense_equivalent_bytes", ">= 0");
  return bytes;
}

int ReadRank(EventReader& reader) {
  const int64_t rank = reader.OptionalInteger("rank", -1);
  reader.Require(rank >= -1 && rank <= std::numeric_limits<int>::max(), "rank",
                 ">= 0");
  return static_cast<int>(rank);
}

}  // namespace

double CompressionRatio(const WireBytes& bytes) {
  if (bytes.wire() <= 0) return 0;
  return static_cast<double>(bytes.dense_equivalent) /
         static_cast<double>(bytes.wire());
}

absl::StatusOr<WorkerEvent> ParseWorkerEvent(absl::string_view line) {
  absl::StatusOr<FlatJsonObject> object = ParseFlatJsonObject(line);
  if (!object.ok()) return object.status();
  auto kind = object->find("event");
  if (kind == object->end() || kind->second.type != JsonValue::Type::kString) {
    return absl::NotFoundError("a JSON object without an \"event\" string");
  }
  const std::string& name = kind->second.string;
  EventReader reader(*object, name);
  WorkerEvent event;
  if (name == "start") {
    StartEvent start;
    start.rank = ReadRank(reader);
    start.world_size =
        static_cast<int>(reader.OptionalInteger("world_size", 0));
    start.steps_per_epoch = reader.Integer("steps_per_epoch");
    start.total_steps = reader.Integer("total_steps");
    start.first_step = reader.OptionalInteger("first_step", 0);
    start.parameters = reader.OptionalInteger("parameters", 0);
    start.layers = reader.OptionalInteger("layers", 0);
    reader.Require(start.steps_per_epoch >= 1, "steps_per_epoch", ">= 1");
    reader.Require(start.total_steps >= 1, "total_steps", ">= 1");
    reader.Require(start.first_step >= 0, "first_step", ">= 0");
    event = start;
  } else if (name == "step") {
    StepEvent step;
    step.rank = ReadRank(reader);
    step.epoch = reader.Integer("epoch");
    step.step = reader.Integer("step");
    step.loss = reader.NumberOrNull("loss");
    step.bytes = ReadBytes(reader);
    step.forward_backward_seconds =
        reader.OptionalNumber("forward_backward_seconds").value_or(0);
    step.compress_seconds =
        reader.OptionalNumber("compress_seconds").value_or(0);
    step.wait_seconds = reader.OptionalNumber("wait_seconds").value_or(0);
    step.apply_seconds = reader.OptionalNumber("apply_seconds").value_or(0);
    step.step_seconds = reader.OptionalNumber("step_seconds").value_or(0);
    event = step;
  } else if (name == "epoch") {
    EpochEvent epoch;
    epoch.rank = ReadRank(reader);
    epoch.epoch = reader.Integer("epoch");
    epoch.step = reader.Integer("step");
    epoch.test_accuracy = reader.Number("test_accuracy");
    epoch.test_loss = reader.OptionalNumber("test_loss");
    event = epoch;
  } else if (name == "eval") {
    EvalEvent eval;
    eval.rank = ReadRank(reader);
    eval.step = reader.Integer("step");
    eval.seconds = reader.Number("seconds");
    eval.train_seconds =
        reader.OptionalNumber("train_seconds").value_or(eval.seconds);
    eval.test_accuracy = reader.Number("test_accuracy");
    eval.test_loss = reader.OptionalNumber("test_loss");
    eval.validation_accuracy = reader.OptionalNumber("validation_accuracy");
    eval.validation_loss = reader.OptionalNumber("validation_loss");
    reader.Require(eval.seconds >= 0, "seconds", ">= 0");
    event = eval;
  } else if (name == "done") {
    DoneEvent done;
    done.rank = ReadRank(reader);
    done.steps = reader.Integer("steps");
    // Negative: "not evaluated" (entrograd-worker's -1 on ranks but 0).
    done.test_accuracy = reader.OptionalNumber("test_accuracy");
    if (done.test_accuracy.has_value() && *done.test_accuracy < 0) {
      done.test_accuracy.reset();
    }
    done.test_loss = reader.OptionalNumber("test_loss");
    if (done.test_loss.has_value() && *done.test_loss < 0)
      done.test_loss.reset();
    done.params_hash = reader.String("params_hash");
    done.seconds = reader.OptionalNumber("seconds");
    done.train_seconds = reader.OptionalNumber("train_seconds");
    if (reader.Has("uplink_wire_bytes") || reader.Has("downlink_wire_bytes") ||
        reader.Has("dense_equivalent_bytes")) {
      done.bytes = ReadBytes(reader);
    }
    event = done;
  } else if (name == "error") {
    ErrorEvent error;
    error.rank = ReadRank(reader);
    error.message = reader.OptionalString("message").value_or("(no message)");
    event = error;
  } else {
    return absl::NotFoundError(absl::StrCat("unknown event \"", name, "\""));
  }
  if (!reader.status().ok()) return reader.status();
  return event;
}

}  // namespace entrograd::launcher
