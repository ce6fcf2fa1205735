// DistributedOptimizer: entrograd for a LibTorch training loop, in the style
// of Horovod's DistributedOptimizer. It hooks every parameter's gradient so
// that each layer is compressed (ALGORITHM.md 5.1-5.7) and sent as soon as
// backward produces it, then Step() waits for each merged layer, applies it
// and moves to the next step:
//
//   auto client = entrograd::Client::Connect(options, LayerTable(params),
//                                            HashOf(params)).value();
//   auto optimizer = entrograd::DistributedOptimizer::Create(
//       model->named_parameters(), optimizer_options, client.get()).value();
//   for (...) {
//     auto loss = criterion(model->forward(x), y);
//     loss.backward();                      // hooks compress and send
//     absl::Status s = optimizer->Step();   // wait, apply, next step
//   }
//
// Applying (ALGORITHM.md 7): with momentum correction (the default when
// momentum > 0) the momentum is applied locally before compression (5.1), so
// the merged update is applied with plain SGD: p <- p - lr * merged. Layers
// sent whole every step (IsSentWhole: policy kDense, or fewer than
// dense_below elements) are the exception: they take no part in the local
// momentum, and keep a momentum buffer B here instead, for ordinary momentum
// SGD on the merged gradient: B <- mu * B + merged; p <- p - lr * B (each
// operation rounded in float32, never fused). Under kDense this makes the
// optimizer exactly synchronous momentum SGD. Without momentum correction,
// the merged update becomes p.grad and the caller's inner optimizer steps.
// Every rank applies the same merged bytes to the same parameters, so
// replicas stay bitwise identical.
//
// CUDA tensors: gradients are copied to the CPU path for compression (the
// CUDA kernels will take them where they live); updates are applied on the
// parameter's device.
//
// Global top-k (options.merged_keep_factor > 0): the aggregator returns
// only the merged entries of largest magnitude; the entries of this rank it
// left out go back into the residual before the next step, so the
// compressed gradient is still conserved.
//
// A lossy wire value type (the client's value_type(): f16, bf16, e5m2):
// the aggregator receives each sent value rounded; what the rounding took
// off goes back into the residual once the merged update arrives, so it is
// sent later instead of lost (error feedback). Layers sent whole keep no
// residual and lose their rounding, as does the merged update's own rounding
// on the way back.
//
// Errors: LibTorch's c10::Error is caught at every public entry and returned
// as INTERNAL; client errors (ABORTED when a rank died, UNAVAILABLE,
// DEADLINE_EXCEEDED) come back from Step() unchanged. After an error the
// optimizer refuses further steps (FAILED_PRECONDITION).
//
// Thread safety: hooks run on autograd threads and may run concurrently for
// different layers; Step, SaveState and LoadState must not run concurrently
// with a backward pass or with each other.
#ifndef ENTROGRAD_TORCH_DISTRIBUTED_OPTIMIZER_H_
#define ENTROGRAD_TORCH_DISTRIBUTED_OPTIMIZER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "entrograd/client.h"
#include "entrograd/client_metrics.h"
#include "entrograd/compression_options.h"
#include "entrograd/layer_compressor.h"
#include "torch/torch.h"

namespace entrograd {

struct DistributedOptimizerOptions {
  // Policy, rho, intervals, dense_below, warm-up, momentum correction and
  // momentum factor. compression.momentum_correction with momentum > 0 is
  // what training with SGD + momentum should use.
  CompressionOptions compression;
  // Learning rate of the plain SGD step, and of the momentum SGD step of the
  // layers sent whole (momentum correction only), > 0.
  double learning_rate = 0.1;
  // L2 weight decay added to each gradient before compression, >= 0.
  double weight_decay = 0.0;
  // Global top-k (docs/ALGORITHM.md steps 6 and 7, variant; gTop-k): 0
  // takes the whole union of the ranks' entries back (the method as
  // specified). c in [1, 1e6] asks the aggregator for only the
  // ceil(c * largest rank's k) merged entries of largest |value| of each
  // compressed layer, so the downlink carries about c times what one rank
  // sends instead of up to world size times; entries this rank sent that
  // the merged update left out go back into its residual (nothing is lost).
  // Layers sent whole always take the union.
  double merged_keep_factor = 0.0;
  // Momentum correction only (docs/ALGORITHM.md step 7, variant). false (the
  // method as specified): the residual G and velocity V hold gradients, so
  // an entry held back is applied at the rate of the step that finally sends
  // it. true: they are kept in update units; set_learning_rate from a to b
  // multiplies every compressed layer's G and V by a / b, so each gradient
  // is applied at the rate of the step that computed it, as in dense SGD.
  // Under a constant rate the two are the same bytes. The momentum buffer B
  // of a layer sent whole is not scaled (ordinary momentum SGD, as torch's).
  bool accumulate_in_update_space = false;
  // The optimizer that steps on the merged gradient when momentum correction
  // is off (e.g. torch::optim::SGD or Adam over the same parameters). Not
  // owned; required then, ignored otherwise.
  torch::optim::Optimizer* inner_optimizer = nullptr;
  // Client-side Prometheus metrics (compress time, traffic, per-layer
  // entropy and keep ratio). Not owned; null: none.
  ClientMetrics* metrics = nullptr;
};

// Per-step timing, seconds, summed over layers.
struct StepTiming {
  double compress_seconds = 0.0;  // entropy, selection, residual, encode
  double wait_seconds = 0.0;      // Step() waiting for merged layers
  double apply_seconds = 0.0;     // decoding and applying merged layers
};

// One layer's entries over the steps an optimizer completed: what share of
// the layer this rank sent, and what share the merged updates applied.
struct LayerTotals {
  std::string name;
  int64_t numel = 0;
  int64_t steps = 0;         // steps completed by this optimizer
  // Entries this rank sent (a layer sent dense counts numel), summed.
  int64_t sent_entries = 0;
  // Entries of the merged updates applied to the parameter, summed: the
  // union of the ranks' entries, or fewer under global top-k.
  int64_t merged_entries = 0;
  // sent_entries / (steps * numel) and merged_entries / (steps * numel);
  // 0 before the first step.
  double sent_share() const;
  double merged_share() const;
};

// The Join layer table of named parameters (names and element counts).
std::vector<LayerSpecification> LayerTableOf(
    const std::vector<std::pair<std::string, torch::Tensor>>& parameters);
// HashParameters over the parameters' float32 values, in order.
uint64_t HashOfParameters(const std::vector<torch::Tensor>& parameters);
// What the client sends for `compressed` as layer `layer`: the step, the
// kept entries (moved out of `compressed`) and the entropy statistics the
// client's metrics report.
LayerContribution ContributionOf(CompressedLayer&& compressed, uint32_t layer);

class DistributedOptimizer {
 public:
  // `parameters` in a fixed order shared by every rank (named_parameters()
  // order); float32. `client` (not owned) must have joined with
  // LayerTableOf(parameters) and must outlive the optimizer. `first_step` is
  // the step the next backward belongs to (the checkpoint's step on resume).
  // Errors: INVALID_ARGUMENT (options, non-float32 or empty parameters, a
  // frozen parameter (requires_grad false), missing inner optimizer), naming
  // the parameter or option; no hook is left registered.
  static absl::StatusOr<std::unique_ptr<DistributedOptimizer>> Create(
      const std::vector<std::pair<std::string, torch::Tensor>>& parameters,
      const DistributedOptimizerOptions& options, Client* client,
      int64_t first_step = 0);

  ~DistributedOptimizer();
  DistributedOptimizer(const DistributedOptimizer&) = delete;
  DistributedOptimizer& operator=(const DistributedOptimizer&) = delete;

  // Completes the current step: compresses and sends layers whose hook did
  // not fire (no gradient: sent as zeros so every round completes), waits
  // for every merged layer, applies it, marks the step applied and advances.
  // Errors: see the file comment.
  absl::Status Step();

  // The step the next backward pass belongs to.
  int64_t step() const { return step_; }
  const StepTiming& last_timing() const { return last_timing_; }
  // The learning rate of the next steps' updates (options.learning_rate
  // until changed), for a schedule: warm-up, step decay, cosine. Under
  // momentum correction the residual, velocity and momentum buffers hold
  // gradients, not updates, so a new rate applies from the next Step() on
  // with nothing to rescale; with accumulate_in_update_space a change of
  // rate from a to b scales every compressed layer's residual and velocity
  // by a / b (see the option). Call from the thread that calls Step(),
  // between steps, with the same rate on every rank (the replicas stay
  // identical only then). Not saved by SaveState: a resumed job sets it
  // again from its schedule. (Under accumulate_in_update_space the
  // checkpoint holds the rate its residuals are in, and LoadState restores
  // it, so that the schedule's next rate scales them from there.)
  // Errors: INVALID_ARGUMENT unless finite and > 0, or when a scaled
  // residual or velocity would not be finite in float32 (naming the
  // parameter); FAILED_PRECONDITION without momentum correction (the inner
  // optimizer applies the merged gradient: set its rate). On error nothing
  // changes.
  absl::Status set_learning_rate(double learning_rate);
  double learning_rate() const { return options_.learning_rate; }

  // Every layer's entries sent and applied over the steps this optimizer
  // completed (counted from Create: a resumed run's earlier steps are not
  // in them), in the parameters' order. Call from the thread that calls
  // Step(), between steps.
  std::vector<LayerTotals> layer_totals() const;

  // Checkpoint of the optimizer's state: step, every layer's residual and
  // velocity, the momentum buffer B of every layer sent whole under
  // momentum correction, and under share_hold_steps > 1 every layer's held
  // share, and under accumulate_in_update_space the rate the residuals and
  // velocities are in (LoadState makes it learning_rate() again) (the inner
  // optimizer is the caller's to save).
  // SaveState errors: INTERNAL on I/O failure.
  absl::Status SaveState(const std::string& path) const;
  // Restores what SaveState wrote. Errors: INVALID_ARGUMENT when the file
  // does not load or does not match these parameters and options (layer
  // count, sizes, non-float32 or non-finite values, a nonzero residual or
  // velocity of a layer sent whole), and when it lacks a momentum buffer these options
  // need (naming the key and the parameter: a checkpoint written before
  // layers sent whole kept one, or under other options) or holds one they do
  // not; likewise for the held share under share_hold_steps > 1 (naming the
  // key, and a window or fraction out of range). On error nothing changes.
  absl::Status LoadState(const std::string& path);

 private:
  struct Layer;
  DistributedOptimizer(const DistributedOptimizerOptions& options,
                       Client* client, int64_t first_step);
  // The autograd hook body for layer `index`.
  void OnGradient(size_t index, const torch::Tensor& gradient);
  absl::Status CompressAndSend(size_t index, const torch::Tensor& gradient);
  // Sends layer `index`'s selection, keeping a copy of its entries under
  // global top-k (merged_keep_factor > 0) or a lossy wire value type for
  // PutBackUnapplied.
  absl::Status SendCompressed(size_t index, CompressedLayer&& compressed);
  // Puts what was not applied of layer `index`'s sent entries back into its
  // residual (ALGORITHM.md step 7): under global top-k the entries `merged`
  // left out, and under a lossy wire value type the rounding error of the
  // others.
  absl::Status PutBackUnapplied(size_t index, const DecodedPayload& merged);
  absl::Status StepImpl();

  DistributedOptimizerOptions options_;
  Client* const client_;
  std::vector<std::unique_ptr<Layer>> layers_;
  int64_t step_;
  StepTiming last_timing_;
  std::mutex error_mutex_;
  // A hook's failure, reported by Step(); after a failed Step, the
  // FAILED_PRECONDITION refusal (quoting the failure) every later Step gets.
  absl::Status first_error_;
};

}  // namespace entrograd

#endif  // ENTROGRAD_TORCH_DISTRIBUTED_OPTIMIZER_H_
