// The events a worker prints on stdout, one JSON object per line (the
// contract between entrograd-worker and this launcher). Keys not listed
// here are ignored, so workers may add more.
//
//   {"event":"start","rank":r,"world_size":W,"steps_per_epoch":S,
//    "total_steps":T,"parameters":P,"layers":L[,"first_step":F]}
//   {"event":"step","rank":r,"epoch":e,"step":s,"loss":x,
//    "uplink_wire_bytes":u,"downlink_wire_bytes":d,
//    "dense_equivalent_bytes":q,"forward_backward_seconds":f,
//    "compress_seconds":c,"wait_seconds":w,"apply_seconds":a,
//    "step_seconds":t}
//   {"event":"epoch","rank":r,"epoch":e,"step":s,"test_accuracy":a,
//    "test_loss":l}
//   {"event":"eval","rank":r,"step":s,"seconds":t,"train_seconds":u,
//    "test_accuracy":a,"test_loss":l}
//   {"event":"done","rank":r,"steps":s,"test_accuracy":a,
//    "params_hash":"...","seconds":t,"train_seconds":u,
//    + the three byte keys}
//   {"event":"error","rank":r,"message":"..."}
//
// "seconds" of an eval is the wall-clock time since the training loop
// started; "train_seconds" leaves out the time spent evaluating.
// Byte counts are cumulative for the rank since it started;
// dense_equivalent is what its uplink plus downlink would have been as dense
// float32. The launcher does not rely on how epochs and steps are numbered
// (from 0 or 1): it counts events and compares values.
#ifndef ENTROGRAD_WORKERS_LAUNCHER_WORKER_EVENTS_H_
#define ENTROGRAD_WORKERS_LAUNCHER_WORKER_EVENTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace entrograd::launcher {

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

struct StartEvent {
  int rank = -1;
  int world_size = 0;           // 0 when absent
  int64_t steps_per_epoch = 0;  // required, >= 1
  int64_t total_steps = 0;      // required, >= 1
  int64_t first_step = 0;       // > 0 when resumed from a checkpoint
  int64_t parameters = 0;       // 0 when absent
  int64_t layers = 0;           // 0 when absent
};

struct StepEvent {
  int rank = -1;
  int64_t epoch = 0;
  int64_t step = 0;
  // NaN when training diverged ("loss": null, NaN or Infinity; the key must
  // be there).
  double loss = 0;
  WireBytes bytes;
  // Where the step's time went; 0 when absent.
  double forward_backward_seconds = 0;
  double compress_seconds = 0;
  double wait_seconds = 0;  // network and merge
  double apply_seconds = 0;
  double step_seconds = 0;
};

// A periodic evaluation (--eval_every), for time-to-accuracy.
struct EvalEvent {
  int rank = -1;
  int64_t step = 0;
  double seconds = 0;  // since the training loop started
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
  double test_accuracy = 0;  // fraction in [0, 1]
  std::optional<double> test_loss;
};

struct DoneEvent {
  int rank = -1;
  int64_t steps = 0;
  // Absent on ranks that did not evaluate: the key missing, null, or
  // negative (entrograd-worker prints -1 then).
  std::optional<double> test_accuracy;
  std::optional<double> test_loss;
  std::string params_hash;
  std::optional<double> seconds;
  std::optional<double> train_seconds;  // the loop without evaluations
  std::optional<WireBytes> bytes;  // absent unless all three keys are there
};

struct ErrorEvent {
  int rank = -1;
  std::string message;
};

using WorkerEvent = std::variant<StartEvent, StepEvent, EpochEvent, EvalEvent,
                                 DoneEvent, ErrorEvent>;

// Parses one stdout line (without its newline).
//   INVALID_ARGUMENT: not a JSON object (garbage, a truncated line), or a
//     known event with a required key missing or of the wrong type (the
//     message names the key).
//   NOT_FOUND: a JSON object that is no event this launcher knows (no
//     "event" key, or a newer event name): callers skip it quietly.
// "rank" is optional everywhere (-1 when absent): the launcher knows which
// process printed the line.
absl::StatusOr<WorkerEvent> ParseWorkerEvent(absl::string_view line);

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_WORKER_EVENTS_H_
