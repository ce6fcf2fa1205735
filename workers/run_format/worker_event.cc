#include "workers/run_format/worker_event.h"

#include <iterator>
#include <limits>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "workers/run_format/json_double.h"
#include "workers/run_format/json_fields.h"

namespace entrograd::run_format {

namespace {

void AddBytes(const WireBytes& bytes, Json& json) {
  json["uplink_wire_bytes"] = bytes.uplink;
  json["downlink_wire_bytes"] = bytes.downlink;
  json["dense_equivalent_bytes"] = bytes.dense_equivalent;
}

// The members after "event" and "rank", in the order the header lists them.
void AddMembers(const StartEvent& start, Json& json) {
  json["world_size"] = start.world_size;
  json["steps_per_epoch"] = start.steps_per_epoch;
  json["total_steps"] = start.total_steps;
  json["first_step"] = start.first_step;
  json["parameters"] = start.parameters;
  json["layers"] = start.layers;
  json["policy"] = start.policy;
  json["model"] = start.model;
  json["metrics_port"] = start.metrics_port;
}

void AddMembers(const StepEvent& step, Json& json) {
  json["epoch"] = step.epoch;
  json["step"] = step.step;
  json["loss"] = JsonDouble(step.loss);
  json["forward_backward_seconds"] = JsonDouble(step.forward_backward_seconds);
  json["compress_seconds"] = JsonDouble(step.compress_seconds);
  json["wait_seconds"] = JsonDouble(step.wait_seconds);
  json["apply_seconds"] = JsonDouble(step.apply_seconds);
  json["step_seconds"] = JsonDouble(step.step_seconds);
  json["params_hash"] = step.params_hash;
  AddBytes(step.bytes, json);
  json["reconnects"] = step.reconnects;
}

}  // namespace

void AddEvalMembers(const EvalEvent& eval, Json& json) {
  json["step"] = eval.step;
  json["seconds"] = JsonDouble(eval.seconds);
  json["train_seconds"] = JsonDouble(eval.train_seconds);
  json["test_accuracy"] = JsonDouble(eval.test_accuracy);
  json["test_loss"] = OptionalDouble(eval.test_loss);
  json["validation_accuracy"] = OptionalDouble(eval.validation_accuracy);
  json["validation_loss"] = OptionalDouble(eval.validation_loss);
}

namespace {

void AddMembers(const EvalEvent& eval, Json& json) { AddEvalMembers(eval, json); }

void AddMembers(const EpochEvent& epoch, Json& json) {
  json["epoch"] = epoch.epoch;
  json["step"] = epoch.step;
  json["test_accuracy"] = OptionalDouble(epoch.test_accuracy);
  json["test_loss"] = OptionalDouble(epoch.test_loss);
}

void AddMembers(const DoneEvent& done, Json& json) {
  json["steps"] = done.steps;
  json["test_accuracy"] = OptionalDouble(done.test_accuracy);
  json["test_loss"] = OptionalDouble(done.test_loss);
  json["params_hash"] = done.params_hash;
  json["seconds"] = OptionalDouble(done.seconds);
  json["train_seconds"] = OptionalDouble(done.train_seconds);
  if (done.bytes.has_value()) {
    AddBytes(*done.bytes, json);
  } else {
    for (const char* key : {"uplink_wire_bytes", "downlink_wire_bytes",
                            "dense_equivalent_bytes"}) {
      json[key] = nullptr;
    }
  }
  json["reconnects"] = done.reconnects;
  json["layer_shares"] = LayerSharesJson(done.layer_shares);
}

void AddMembers(const ErrorEvent& error, Json& json) {
  json["code"] = error.code;
  json["message"] = error.message;
}

const char* EventName(const WorkerEvent& event) {
  static constexpr const char* kNames[] = {"start", "step", "epoch",
                                           "eval",  "done", "error"};
  static_assert(std::variant_size_v<WorkerEvent> == std::size(kNames));
  return kNames[event.index()];
}

WireBytes ReadBytes(JsonFieldReader& reader) {
  WireBytes bytes;
  bytes.uplink = reader.Integer("uplink_wire_bytes");
  bytes.downlink = reader.Integer("downlink_wire_bytes");
  bytes.dense_equivalent = reader.Integer("dense_equivalent_bytes");
  reader.Require(bytes.uplink >= 0, "uplink_wire_bytes", ">= 0");
  reader.Require(bytes.downlink >= 0, "downlink_wire_bytes", ">= 0");
  reader.Require(bytes.dense_equivalent >= 0, "dense_equivalent_bytes", ">= 0");
  return bytes;
}

int ReadRank(JsonFieldReader& reader) {
  const int64_t rank = reader.OptionalInteger("rank").value_or(-1);
  reader.Require(rank >= -1 && rank <= std::numeric_limits<int>::max(), "rank",
                 ">= 0");
  return static_cast<int>(rank);
}

StartEvent ReadStart(JsonFieldReader& reader) {
  StartEvent start;
  start.rank = ReadRank(reader);
  const int64_t world_size = reader.OptionalInteger("world_size").value_or(0);
  reader.Require(
      world_size >= 0 && world_size <= std::numeric_limits<int>::max(),
      "world_size", ">= 0");
  start.world_size = static_cast<int>(world_size);
  start.steps_per_epoch = reader.Integer("steps_per_epoch");
  start.total_steps = reader.Integer("total_steps");
  start.first_step = reader.OptionalInteger("first_step").value_or(0);
  start.parameters = reader.OptionalInteger("parameters").value_or(0);
  start.layers = reader.OptionalInteger("layers").value_or(0);
  start.policy = reader.OptionalString("policy").value_or("");
  start.model = reader.OptionalString("model").value_or("");
  const int64_t port = reader.OptionalInteger("metrics_port").value_or(0);
  reader.Require(port >= 0 && port <= 65535, "metrics_port", "in [0, 65535]");
  start.metrics_port = static_cast<int>(port);
  reader.Require(start.steps_per_epoch >= 1, "steps_per_epoch", ">= 1");
  reader.Require(start.total_steps >= 1, "total_steps", ">= 1");
  reader.Require(start.first_step >= 0, "first_step", ">= 0");
  return start;
}

StepEvent ReadStep(JsonFieldReader& reader) {
  StepEvent step;
  step.rank = ReadRank(reader);
  step.epoch = reader.Integer("epoch");
  step.step = reader.Integer("step");
  step.loss = reader.Double("loss");
  step.forward_backward_seconds =
      reader.OptionalDouble("forward_backward_seconds").value_or(0);
  step.compress_seconds = reader.OptionalDouble("compress_seconds").value_or(0);
  step.wait_seconds = reader.OptionalDouble("wait_seconds").value_or(0);
  step.apply_seconds = reader.OptionalDouble("apply_seconds").value_or(0);
  step.step_seconds = reader.OptionalDouble("step_seconds").value_or(0);
  step.params_hash = reader.OptionalString("params_hash").value_or("");
  step.bytes = ReadBytes(reader);
  step.reconnects = reader.OptionalInteger("reconnects").value_or(0);
  return step;
}

EvalEvent ReadEval(JsonFieldReader& reader) {
  EvalEvent eval;
  eval.rank = ReadRank(reader);
  eval.step = reader.Integer("step");
  eval.seconds = reader.Double("seconds");
  eval.train_seconds =
      reader.OptionalDouble("train_seconds").value_or(eval.seconds);
  eval.test_accuracy = reader.Double("test_accuracy");
  eval.test_loss = reader.OptionalDouble("test_loss");
  eval.validation_accuracy = reader.OptionalDouble("validation_accuracy");
  eval.validation_loss = reader.OptionalDouble("validation_loss");
  reader.Require(eval.seconds >= 0, "seconds", ">= 0");
  return eval;
}

EpochEvent ReadEpoch(JsonFieldReader& reader) {
  EpochEvent epoch;
  epoch.rank = ReadRank(reader);
  epoch.epoch = reader.Integer("epoch");
  epoch.step = reader.Integer("step");
  epoch.test_accuracy = reader.OptionalDouble("test_accuracy");
  epoch.test_loss = reader.OptionalDouble("test_loss");
  return epoch;
}

DoneEvent ReadDone(JsonFieldReader& reader) {
  DoneEvent done;
  done.rank = ReadRank(reader);
  done.steps = reader.Integer("steps");
  done.test_accuracy = reader.OptionalDouble("test_accuracy");
  done.test_loss = reader.OptionalDouble("test_loss");
  done.params_hash = reader.String("params_hash");
  done.seconds = reader.OptionalDouble("seconds");
  done.train_seconds = reader.OptionalDouble("train_seconds");
  if (reader.Has("uplink_wire_bytes") || reader.Has("downlink_wire_bytes") ||
      reader.Has("dense_equivalent_bytes")) {
    done.bytes = ReadBytes(reader);
  }
  done.reconnects = reader.OptionalInteger("reconnects").value_or(0);
  return done;
}

ErrorEvent ReadError(JsonFieldReader& reader) {
  ErrorEvent error;
  error.rank = ReadRank(reader);
  error.code = reader.OptionalString("code").value_or("");
  error.message = reader.OptionalString("message").value_or("(no message)");
  return error;
}

}  // namespace

Json LayerSharesJson(const std::vector<LayerShare>& shares) {
  Json array = Json::array();
  for (const LayerShare& share : shares) {
    Json entry = Json::object();
    entry["name"] = share.name;
    entry["numel"] = share.numel;
    entry["sent_share"] = JsonDouble(share.sent_share);
    entry["merged_share"] = JsonDouble(share.merged_share);
    array.push_back(std::move(entry));
  }
  return array;
}

absl::StatusOr<std::vector<LayerShare>> ReadLayerShares(
    const Json& object, absl::string_view context) {
  std::vector<LayerShare> shares;
  const auto member = object.find("layer_shares");
  if (member == object.end() || member->is_null()) return shares;
  if (!member->is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(context, ": \"layer_shares\" is not an array"));
  }
  for (size_t i = 0; i < member->size(); ++i) {
    const Json& entry = (*member)[i];
    const std::string where = absl::StrCat(context, " layer_shares[", i, "]");
    if (!entry.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " is not an object"));
    }
    JsonFieldReader reader(entry, where);
    LayerShare share;
    share.name = reader.String("name");
    share.numel = reader.Integer("numel");
    share.sent_share = reader.Double("sent_share");
    share.merged_share = reader.Double("merged_share");
    reader.Require(share.numel >= 1, "numel", ">= 1");
    reader.Require(share.sent_share >= 0 && share.sent_share <= 1, "sent_share",
                   "in [0, 1]");
    reader.Require(share.merged_share >= 0 && share.merged_share <= 1,
                   "merged_share", "in [0, 1]");
    if (!reader.status().ok()) return reader.status();
    shares.push_back(std::move(share));
  }
  return shares;
}

double CompressionRatio(const WireBytes& bytes) {
  if (bytes.wire() <= 0) return 0;
  return static_cast<double>(bytes.dense_equivalent) /
         static_cast<double>(bytes.wire());
}

std::string FormatWorkerEvent(const WorkerEvent& event) {
  Json json = Json::object();
  json["event"] = EventName(event);
  std::visit(
      [&json](const auto& typed) {
        json["rank"] = typed.rank;
        AddMembers(typed, json);
      },
      event);
  return DumpJson(json);
}

void EmitWorkerEvent(const WorkerEvent& event, std::FILE* out) {
  const std::string line = FormatWorkerEvent(event) + "\n";
  std::fwrite(line.data(), 1, line.size(), out);
  std::fflush(out);
}

absl::StatusOr<WorkerEvent> ParseWorkerEvent(absl::string_view line) {
  absl::StatusOr<Json> parsed = ParseJsonObject(line, "worker event line");
  if (!parsed.ok()) return parsed.status();
  const Json& json = *parsed;
  const auto kind = json.find("event");
  if (kind == json.end() || !kind->is_string()) {
    return absl::NotFoundError("a JSON object without an \"event\" string");
  }
  const std::string name = kind->get<std::string>();
  JsonFieldReader reader(json, absl::StrCat("\"", name, "\" event"));
  WorkerEvent event;
  if (name == "start") {
    event = ReadStart(reader);
  } else if (name == "step") {
    event = ReadStep(reader);
  } else if (name == "eval") {
    event = ReadEval(reader);
  } else if (name == "epoch") {
    event = ReadEpoch(reader);
  } else if (name == "done") {
    DoneEvent done = ReadDone(reader);
    if (reader.status().ok()) {
      absl::StatusOr<std::vector<LayerShare>> shares =
          ReadLayerShares(json, absl::StrCat("\"", name, "\" event"));
      if (!shares.ok()) return shares.status();
      done.layer_shares = std::move(*shares);
    }
    event = std::move(done);
  } else if (name == "error") {
    event = ReadError(reader);
  } else {
    return absl::NotFoundError(absl::StrCat("unknown event \"", name, "\""));
  }
  if (!reader.status().ok()) return reader.status();
  return event;
}

}  // namespace entrograd::run_format
