// LayerCompressor: ALGORITHM.md steps 5.1 to 5.7 for one layer, on CPU.
// It owns the layer's residual G and (with momentum correction) velocity V.
//
//   u (fresh gradient) --Accumulate--> A = G + u   (or V <- mu V + u; A = G + V)
//                                      entropy H of u (or A), histogram of |A|
//                      --Select(k)-->  k largest |A| (ties: smaller index)
//                                      sent = A[selected]; G <- A, G[selected] = 0
//                                      V[selected] = 0 (momentum factor masking)
//
// Conservation holds bitwise: writing the sent values over G (after) at their
// indices gives A (before) exactly.
//
// A layer sent whole every step (IsSentWhole: policy kDense, or fewer than
// dense_below elements) takes no part in the residual or in momentum
// correction (ALGORITHM.md 5.1): A = u exactly, and G and V stay 0. Its
// momentum, if any, is the optimizer's to apply to the merged update (7).
//
// Atomicity: Accumulate writes into scratch buffers; G and V change only when
// Select succeeds. On any error the state is as before the call.
//
// Memory: 2 * numel floats (G and scratch A), 4 * numel with momentum
// correction (plus V and scratch V), 3 * numel for a layer sent whole with
// momentum correction (its V, all zeros, keeps the checkpoint's shape).
//
// Thread safety: not thread-safe; use one LayerCompressor per layer and call
// it from one thread at a time. Different layers may be compressed
// concurrently.
#ifndef ENTROGRAD_LAYER_COMPRESSOR_H_
#define ENTROGRAD_LAYER_COMPRESSOR_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "entrograd/compression_options.h"
#include "entrograd/entropy.h"
#include "entrograd/held_share.h"
#include "entrograd/keep_count.h"
#include "entrograd/select.h"

namespace entrograd {

// What one layer sends for one step (ALGORITHM.md 5.7).
struct CompressedLayer {
  int64_t step = 0;
  int64_t numel = 0;
  int64_t k = 0;                    // entries sent (numel when dense)
  EntropyStats entropy;             // of u (of A: options.entropy_of)
  double keep_ratio = 0.0;          // r_l as the policy asked (k / n for
                                    // threshold and dense)
  bool dense = false;               // every entry sent; indices left empty
  std::vector<uint32_t> indices;    // ascending, size k (empty when dense)
  std::vector<float> values;        // A at indices (all of A when dense)
};

class LayerCompressor {
 public:
  // Creates the compressor of a layer of `numel` elements with G = 0 and
  // V = 0. Errors: INVALID_ARGUMENT for numel outside [1, 2^32 - 1] or
  // invalid options (see ValidateCompressionOptions).
  static absl::StatusOr<std::unique_ptr<LayerCompressor>> Create(
      int64_t numel, const CompressionOptions& options);

  LayerCompressor(const LayerCompressor&) = delete;
  LayerCompressor& operator=(const LayerCompressor&) = delete;

  // Whole step with the configured policy: Accumulate, then Select with the
  // policy's k. Errors: those of Accumulate and Select; FAILED_PRECONDITION
  // for kEntropyBudget (use the two phases with BudgetKeepCounts).
  absl::Status Compress(absl::Span<const float> gradient, int64_t step,
                        CompressedLayer* out);

  // Phase 1 (5.1-5.3): computes A from the fresh gradient into scratch and
  // returns the gradient's interval entropy. A pending accumulation is
  // replaced. `max_keep`, when in [1, numel), is an upper bound on the k the
  // following selection will ask for: the pass then also collects the
  // selection's candidates and saves a second pass over A (the result is
  // exact whatever k comes). Errors: INVALID_ARGUMENT when gradient.size()
  // != numel or the gradient holds NaN/Inf (naming the element); an A that
  // overflows to Inf is reported by the selection.
  absl::StatusOr<EntropyStats> Accumulate(absl::Span<const float> gradient,
                                          int64_t max_keep = -1);

  // Phase 2 (5.5-5.7) with an explicit k in [0, numel]: selects, fills *out
  // and commits G (and V). Errors: FAILED_PRECONDITION without a pending
  // Accumulate; INVALID_ARGUMENT for k out of range, or k != numel for a
  // layer sent whole (it keeps no residual for what it would not send).
  absl::Status SelectTopK(int64_t k, int64_t step, double keep_ratio,
                          CompressedLayer* out);

  // Phase 2 with the configured policy (not kEntropyBudget). Under
  // options().share_hold_steps > 1 the policy sees the held share
  // (entrograd/held_share.h), which a successful call updates.
  absl::Status SelectWithPolicy(int64_t step, CompressedLayer* out);

  // Drops a pending accumulation; G and V stay as they were.
  void DiscardPending() { pending_ = false; }

  int64_t numel() const { return numel_; }
  const CompressionOptions& options() const { return options_; }
  // IsSentWhole(numel(), options()): sends u whole every step, G and V stay 0.
  bool sent_whole() const { return sent_whole_; }
  // The residual G and velocity V (empty without momentum correction). Valid
  // until the next non-const call.
  absl::Span<const float> residual() const { return residual_; }
  absl::Span<const float> velocity() const { return velocity_; }

  // Replaces G and V, e.g. from a checkpoint. `velocity` must be empty
  // without momentum correction. Errors: INVALID_ARGUMENT for wrong sizes,
  // non-finite values, or nonzero values for a layer sent whole (naming the
  // element); state unchanged on error.
  absl::Status RestoreState(absl::Span<const float> residual,
                            absl::Span<const float> velocity);

  // Multiplies G and V by `factor`, each element rounded to float32 once
  // (float(double(x) * factor)), so that they stay in update units when the
  // learning rate changes (DistributedOptimizerOptions::
  // accumulate_in_update_space). A layer sent whole keeps its zeros.
  // CheckScaleState says whether ScaleState would succeed, changing nothing,
  // so that a caller scaling several layers can check them all first.
  // Errors, state unchanged: INVALID_ARGUMENT unless factor is finite and
  // > 0, or when a scaled value would not be finite (naming the element);
  // FAILED_PRECONDITION with an accumulation pending.
  absl::Status CheckScaleState(double factor) const;
  absl::Status ScaleState(double factor);
  // ScaleState without its check, for a caller that had
  // CheckScaleState(factor) return OK and made no non-const call since
  // (DistributedOptimizer checks every layer, then scales them all): one
  // pass over G and V instead of two. Otherwise a value may overflow to inf.
  void ScaleCheckedState(double factor);

  // The part of a sent selection that was not applied goes back into the
  // residual, G[indices[j]] += values[j] (ALGORITHM.md step 7): under global
  // top-k the whole selected value of an entry the merged update left out
  // (with the values as selected, G at those entries equals A before the
  // selection, bit for bit), and for a lossy wire value type the rounding
  // error of an entry that was applied. Velocities stay masked. Errors,
  // state unchanged: FAILED_PRECONDITION for a layer sent whole (it keeps
  // no residual) or with an accumulation pending (its A would miss them);
  // INVALID_ARGUMENT for indices.size() != values.size(), indices not
  // strictly ascending or not below numel, or a value or sum that is not
  // finite (naming the element).
  absl::Status KeepUnapplied(absl::Span<const uint32_t> indices,
                             absl::Span<const float> values);

  // The entropy share held under share_hold_steps > 1 (nothing held
  // otherwise), and its replacement from a checkpoint. RestoreHeldShare
  // errors: INVALID_ARGUMENT as ValidateHeldShare; state unchanged.
  const HeldShare& held_share() const { return held_share_; }
  absl::Status RestoreHeldShare(const HeldShare& held);

 private:
  LayerCompressor(int64_t numel, const CompressionOptions& options);

  absl::Status SelectAndCommit(int64_t k, int64_t step, double keep_ratio,
                               CompressedLayer* out);
  absl::Status SelectWithDecision(const KeepDecision& decision, int64_t step,
                                  CompressedLayer* out);
  absl::Status CheckAccumulatedFinite() const;
  // Upper bound on the policy's k at `step`, or -1 when there is none worth
  // collecting candidates for.
  int64_t MaxKeepCount(int64_t step) const;
  absl::Status Commit(int64_t step, double keep_ratio, bool dense,
                      CompressedLayer* out);

  const int64_t numel_;
  const CompressionOptions options_;
  const bool sent_whole_;
  std::vector<float> residual_;            // G (all 0 when sent whole)
  std::vector<float> velocity_;            // V (momentum correction only)
  std::vector<float> pending_accumulated_; // A of the pending step
  std::vector<float> pending_velocity_;    // V of the pending step
  std::vector<double> interval_sums_;      // of |u| (or |A|), for entropy
  EntropyStats pending_entropy_;
  bool pending_ = false;
  HeldShare held_share_;
  // Candidates collected by the pending Accumulate for any k <= candidate_k_
  // (rank keys, in index order, of A at or above a sampled bound).
  std::vector<uint64_t> candidates_;
  std::vector<uint32_t> sample_keys_;
  bool candidates_valid_ = false;
  int64_t candidate_k_ = 0;
  SelectScratch scratch_;
};

}  // namespace entrograd

#endif  // ENTROGRAD_LAYER_COMPRESSOR_H_
