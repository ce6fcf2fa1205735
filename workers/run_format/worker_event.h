// The events entrograd-worker prints on stdout, one JSON object per line:
// the contract between the worker, which writes them with EmitWorkerEvent,
// and entrograd-launch (and tests, and bench/chaos_soak.py), which read them
// with ParseWorkerEvent. Both sides use these structs, so they cannot drift.
//
//   {"event":"start","rank":r,"world_size":W,"steps_per_epoch":S,
//    "total_steps":T,"first_step":F,"parameters":P,"layers":L,
//    "policy":"...","model":"...","metrics_port":m}
//   {"event":"step","rank":r,"epoch":e,"step":s,"loss":x,
//    "forward_backward_seconds":f,"compress_seconds":c,"wait_seconds":w,
//    "apply_seconds":a,"step_seconds":t,"params_hash":"...",
//    "uplink_wire_bytes":u,"downlink_wire_bytes":d,
//    "dense_equivalent_bytes":q,"reconnects":n}
//   {"event":"eval","rank":r,"step":s,"seconds":t,"train_seconds":u,
//    "test_accuracy":a,"test_loss":l,"validation_accuracy":v,
//    "validation_loss":k}
//   {"event":"epoch","rank":r,"epoch":e,"step":s,"test_accuracy":a,
//    "test_loss":l}
//   {"event":"done","rank":r,"steps":s,"test_accuracy":a,"test_loss":l,
//    "params_hash":"...","seconds":t,"train_seconds":u,
//    + the three byte keys, "reconnects" and "layer_shares":
//    [{"name":"...","numel":n,"sent_share":x,"merged_share":y}, ...]}
//   {"event":"error","rank":r,"code":"ABORTED","message":"..."}
//
// Members are written in this order, on one line. An absent optional value
// is written as null; NaN and infinities as the strings "NaN", "Infinity"
// and "-Infinity" (json_double.h), so a diverged loss reads "loss":"NaN".
// Readers ignore members they do not know, so a worker may add more.
// "seconds" of an eval is the wall-clock time since the training loop
// started; "train_seconds" leaves out the time spent evaluating. Byte counts
// are cumulative for the rank since it started; dense_equivalent is what its
// uplink plus downlink would have been as dense float32. In "step" events
// "epoch" and "step" are the step's own indices, from 0; in "epoch", "eval"
// and "done" events "step" / "steps" is the number of steps done, and an
// "epoch" event's "epoch" is the index of the epoch that ended.
//
// Thread safety: pure functions and value types; EmitWorkerEvent writes one
// line with one fwrite.
#ifndef ENTROGRAD_WORKERS_RUN_FORMAT_WORKER_EVENT_H_
#define ENTROGRAD_WORKERS_RUN_FORMAT_WORKER_EVENT_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "workers/run_format/json_double.h"

namespace entrograd::run_format {

// Cumulative bytes of one rank (or, summed, of the job).
struct WireBytes {
  int64_t uplink = 0;
  int64_t downlink = 0;
  int64_t dense_equivalent = 0;

  int64_t wire() const { return uplink + downlink; }
  WireBytes& operator+=(const WireBytes& other) {
    uplink += other.uplink;
    downlink += other.downlink;
    dense_equivalent += other.dense_equivalent;
    return *this;
  }
};

// dense_equivalent / wire; 0 when nothing went over the wire yet.
double CompressionRatio(const WireBytes& bytes);

// In every event "rank" is optional when read (-1 when absent): the launcher
// knows which process printed the line.
struct StartEvent {
  int rank = -1;
  int world_size = 0;           // 0 when absent
  int64_t steps_per_epoch = 0;  // required, >= 1
  int64_t total_steps = 0;      // required, >= 1
  int64_t first_step = 0;       // > 0 when resumed from a checkpoint
  int64_t parameters = 0;       // 0 when absent
  int64_t layers = 0;           // 0 when absent
  std::string policy;           // "" when absent
  std::string model;            // "" when absent
  int metrics_port = 0;         // the worker's /metrics port; 0: none
};

struct StepEvent {
  int rank = -1;
  int64_t epoch = 0;  // required
  int64_t step = 0;   // required
  // Required; NaN or an infinity when training diverged.
  double loss = 0;
  // Where the step's time went; 0 when absent.
  double forward_backward_seconds = 0;
  double compress_seconds = 0;
  double wait_seconds = 0;  // network and merge
  double apply_seconds = 0;
  double step_seconds = 0;
  // The parameters' hash after the step, 16 hex digits: replicas must stay
  // bitwise identical. "" when absent.
  std::string params_hash;
  WireBytes bytes;         // required
  int64_t reconnects = 0;  // the rank's stream reconnects so far
};

// A periodic evaluation (--eval_every), for time-to-accuracy.
struct EvalEvent {
  int rank = -1;
  int64_t step = 0;
  double seconds = 0;  // since the training loop started, >= 0
  // Without the evaluations' own time; `seconds` when absent.
  double train_seconds = 0;
  double test_accuracy = 0;  // fraction in [0, 1]
  std::optional<double> test_loss;
  // On the held-out training images, when the worker has --validation.
  std::optional<double> validation_accuracy;
  std::optional<double> validation_loss;
};

struct EpochEvent {
  int rank = -1;
  int64_t epoch = 0;
  int64_t step = 0;
  // Fraction in [0, 1]; absent (null) when the worker did not evaluate at
  // this epoch's end (--eval_each_epoch=false).
  std::optional<double> test_accuracy;
  std::optional<double> test_loss;
};

// One layer over a run: the share of its entries a rank sent and the share
// the merged updates applied, averaged over steps (each in [0, 1]).
struct LayerShare {
  std::string name;
  int64_t numel = 0;  // >= 1
  double sent_share = 0;
  double merged_share = 0;
};

struct DoneEvent {
  int rank = -1;
  int64_t steps = 0;
  // Absent on ranks that did not evaluate.
  std::optional<double> test_accuracy;
  std::optional<double> test_loss;
  std::string params_hash;              // required
  std::optional<double> seconds;        // since the process started
  std::optional<double> train_seconds;  // the loop without evaluations
  std::optional<WireBytes> bytes;  // absent unless the three keys are there
  int64_t reconnects = 0;
  // Every layer, in the parameters' order; empty when absent.
  std::vector<LayerShare> layer_shares;
};

struct ErrorEvent {
  int rank = -1;
  std::string code;     // absl::StatusCodeToString of the failure; may be ""
  std::string message;  // "(no message)" when absent
};

using WorkerEvent = std::variant<StartEvent, StepEvent, EpochEvent, EvalEvent,
                                 DoneEvent, ErrorEvent>;

// One event as its line, without the newline.
std::string FormatWorkerEvent(const WorkerEvent& event);

// Adds an eval event's members after "event" and "rank" ("step" ...
// "validation_loss") to `json`: summary.json's "evals" entries are these.
void AddEvalMembers(const EvalEvent& eval, Json& json);

// `shares` as the JSON array of the done event's (and summary.json's)
// "layer_shares".
Json LayerSharesJson(const std::vector<LayerShare>& shares);
// Reads such an array from `object`'s member "layer_shares" (absent or null:
// empty). INVALID_ARGUMENT starting with `context`, naming the entry and the
// member, when it is not an array of such objects, or a numel < 1 or a share
// outside [0, 1].
absl::StatusOr<std::vector<LayerShare>> ReadLayerShares(
    const Json& object, absl::string_view context);

// Writes FormatWorkerEvent(event) and a newline to `out` and flushes: the
// launcher reads the lines as they come.
void EmitWorkerEvent(const WorkerEvent& event, std::FILE* out = stdout);

// Parses one stdout line (without its newline).
//   INVALID_ARGUMENT: not a JSON object (garbage, a truncated line), or a
//     known event with a required member missing, of the wrong type or out
//     of range (the message names the member).
//   NOT_FOUND: a JSON object that is no event this reader knows (no "event"
//     string, or a newer event name): callers skip it quietly.
absl::StatusOr<WorkerEvent> ParseWorkerEvent(absl::string_view line);

}  // namespace entrograd::run_format

#endif  // ENTROGRAD_WORKERS_RUN_FORMAT_WORKER_EVENT_H_
