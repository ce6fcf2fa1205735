#include "workers/run_format/run_summary.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "workers/run_format/json_double.h"
#include "workers/run_format/json_fields.h"

namespace entrograd::run_format {

namespace {

// The breakdown's phases, in the order summary.json lists them.
constexpr std::pair<const char*, PhaseStats StepBreakdown::*> kPhases[] = {
    {"forward_backward", &StepBreakdown::forward_backward},
    {"compress", &StepBreakdown::compress},
    {"wait", &StepBreakdown::wait},
    {"apply", &StepBreakdown::apply},
    {"step", &StepBreakdown::step},
};

Json EvalJson(const EvalEvent& eval) {
  Json json = Json::object();
  AddEvalMembers(eval, json);  // the eval event's members, minus event/rank
  return json;
}

EvalEvent ReadEval(JsonFieldReader& reader) {
  EvalEvent eval;
  eval.rank = 0;  // the summary keeps rank 0's evaluations
  eval.step = reader.Integer("step");
  eval.seconds = reader.Double("seconds");
  eval.train_seconds = reader.Double("train_seconds");
  eval.test_accuracy = reader.Double("test_accuracy");
  eval.test_loss = reader.OptionalDouble("test_loss");
  eval.validation_accuracy = reader.OptionalDouble("validation_accuracy");
  eval.validation_loss = reader.OptionalDouble("validation_loss");
  return eval;
}

int ToInt(JsonFieldReader& reader, absl::string_view key, int64_t value) {
  reader.Require(value >= std::numeric_limits<int>::min() &&
                     value <= std::numeric_limits<int>::max(),
                 key, "an int");
  return static_cast<int>(value);
}

}  // namespace

std::string FormatRunSummaryJson(const RunSummary& summary) {
  Json json = Json::object();
  json["job_id"] = summary.job_id;
  json["policy"] = summary.policy;
  json["workers"] = summary.workers;
  json["shards"] = summary.shards;
  json["rho"] = JsonDouble(summary.rho);
  json["threshold"] = JsonDouble(summary.threshold);
  json["epochs"] = summary.epochs;
  json["epochs_completed"] = summary.epochs_completed;
  json["steps"] = summary.steps;
  json["max_steps"] = summary.max_steps;
  json["batch_size"] = summary.batch_size;
  json["lr"] = JsonDouble(summary.lr);
  json["lr_schedule"] = summary.lr_schedule;
  json["momentum"] = JsonDouble(summary.momentum);
  json["seed"] = summary.seed;
  json["model"] = summary.model;
  json["eval_every"] = summary.eval_every;
  json["validation"] = summary.validation;
  json["warmup_steps"] = summary.warmup_steps;
  json["dense_below"] = summary.dense_below;
  json["merged_keep_factor"] = JsonDouble(summary.merged_keep_factor);
  json["value_type"] = summary.value_type;
  json["extra_worker_args"] = summary.extra_worker_args;
  json["parameters"] = summary.parameters;
  json["layers"] = summary.layers;
  json["test_accuracy"] = OptionalDouble(summary.test_accuracy);
  json["test_loss"] = OptionalDouble(summary.test_loss);
  json["validation_accuracy"] = OptionalDouble(summary.validation_accuracy);
  json["uplink_wire_bytes"] = summary.bytes.uplink;
  json["downlink_wire_bytes"] = summary.bytes.downlink;
  json["wire_bytes"] = summary.bytes.wire();
  json["dense_equivalent_bytes"] = summary.bytes.dense_equivalent;
  json["compression_ratio"] = JsonDouble(summary.compression_ratio);
  json["seconds"] = JsonDouble(summary.seconds);
  json["seconds_per_step"] = JsonDouble(summary.seconds_per_step);
  json["wall_seconds"] = JsonDouble(summary.wall_seconds);
  json["compress_seconds"] = JsonDouble(summary.compress_seconds);
  json["wait_seconds"] = JsonDouble(summary.wait_seconds);
  json["replicas_identical"] = summary.replicas_identical;
  json["params_hash"] = summary.params_hash;
  json["train_seconds"] = OptionalDouble(summary.train_seconds);
  json["breakdown_samples"] = summary.breakdown.samples;
  for (const auto& [name, phase] : kPhases) {
    const PhaseStats& stats = summary.breakdown.*phase;
    json[absl::StrCat(name, "_seconds_median")] = JsonDouble(stats.median);
    json[absl::StrCat(name, "_seconds_p90")] = JsonDouble(stats.p90);
  }
  if (summary.link.has_value()) {
    json["link"] = summary.link->rate;
    json["link_workers_sent_bytes"] = summary.link->workers_sent;
    json["link_aggregator_sent_bytes"] = summary.link->aggregator_sent;
    json["link_bytes"] = summary.link->total();
  } else {
    json["link"] = nullptr;
  }
  json["evals"] = Json::array();
  for (const EvalEvent& eval : summary.evals) {
    json["evals"].push_back(EvalJson(eval));
  }
  json["layer_shares"] = LayerSharesJson(summary.layer_shares);
  return DumpJson(json, /*indent=*/2) + "\n";
}

absl::StatusOr<RunSummary> ParseRunSummaryJson(absl::string_view text) {
  absl::StatusOr<Json> parsed = ParseJsonObject(text, "summary.json");
  if (!parsed.ok()) return parsed.status();
  const Json& json = *parsed;
  JsonFieldReader reader(json, "summary.json");
  RunSummary summary;
  summary.job_id = reader.String("job_id");
  summary.policy = reader.String("policy");
  summary.workers = ToInt(reader, "workers", reader.Integer("workers"));
  summary.shards = ToInt(reader, "shards", reader.Integer("shards"));
  summary.rho = reader.Double("rho");
  summary.threshold = reader.Double("threshold");
  summary.epochs = ToInt(reader, "epochs", reader.Integer("epochs"));
  summary.epochs_completed = reader.Integer("epochs_completed");
  summary.steps = reader.Integer("steps");
  summary.max_steps = reader.Integer("max_steps");
  summary.batch_size =
      ToInt(reader, "batch_size", reader.Integer("batch_size"));
  summary.lr = reader.Double("lr");
  summary.lr_schedule = reader.OptionalString("lr_schedule").value_or("constant");
  summary.momentum = reader.Double("momentum");
  summary.seed = reader.Integer("seed");
  summary.model = reader.String("model");
  summary.eval_every = reader.Integer("eval_every");
  summary.validation = reader.Integer("validation");
  summary.warmup_steps = reader.Integer("warmup_steps");
  summary.dense_below = reader.Integer("dense_below");
  summary.merged_keep_factor = reader.Double("merged_keep_factor");
  summary.value_type = reader.String("value_type");
  summary.extra_worker_args = reader.String("extra_worker_args");
  summary.parameters = reader.Integer("parameters");
  summary.layers = reader.Integer("layers");
  summary.test_accuracy = reader.OptionalDouble("test_accuracy");
  summary.test_loss = reader.OptionalDouble("test_loss");
  summary.validation_accuracy = reader.OptionalDouble("validation_accuracy");
  summary.bytes.uplink = reader.Integer("uplink_wire_bytes");
  summary.bytes.downlink = reader.Integer("downlink_wire_bytes");
  summary.bytes.dense_equivalent = reader.Integer("dense_equivalent_bytes");
  summary.compression_ratio = reader.Double("compression_ratio");
  summary.seconds = reader.Double("seconds");
  summary.seconds_per_step = reader.Double("seconds_per_step");
  summary.wall_seconds = reader.Double("wall_seconds");
  summary.compress_seconds = reader.Double("compress_seconds");
  summary.wait_seconds = reader.Double("wait_seconds");
  summary.replicas_identical = reader.Bool("replicas_identical");
  summary.params_hash = reader.String("params_hash");
  summary.train_seconds = reader.OptionalDouble("train_seconds");
  summary.breakdown.samples = reader.Integer("breakdown_samples");
  for (const auto& [name, phase] : kPhases) {
    PhaseStats& stats = summary.breakdown.*phase;
    stats.median = reader.Double(absl::StrCat(name, "_seconds_median"));
    stats.p90 = reader.Double(absl::StrCat(name, "_seconds_p90"));
  }
  if (std::optional<std::string> rate = reader.OptionalString("link")) {
    LinkTraffic link;
    link.rate = *rate;
    link.workers_sent = reader.Integer("link_workers_sent_bytes");
    link.aggregator_sent = reader.Integer("link_aggregator_sent_bytes");
    summary.link = link;
  }
  if (!reader.status().ok()) return reader.status();

  const auto evals = json.find("evals");
  if (evals == json.end() || !evals->is_array()) {
    return absl::InvalidArgumentError(
        "summary.json: \"evals\" is missing or not an array");
  }
  for (size_t i = 0; i < evals->size(); ++i) {
    const Json& entry = (*evals)[i];
    if (!entry.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("summary.json: evals[", i, "] is not an object"));
    }
    JsonFieldReader eval_reader(entry,
                                absl::StrCat("summary.json evals[", i, "]"));
    summary.evals.push_back(ReadEval(eval_reader));
    if (!eval_reader.status().ok()) return eval_reader.status();
  }
  absl::StatusOr<std::vector<LayerShare>> shares =
      ReadLayerShares(json, "summary.json");
  if (!shares.ok()) return shares.status();
  summary.layer_shares = std::move(*shares);
  return summary;
}

}  // namespace entrograd::run_format
