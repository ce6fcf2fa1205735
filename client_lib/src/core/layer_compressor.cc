#include "entrograd/layer_compressor.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "entrograd/common/status_macros.h"
#include "core/accumulate.h"
#include "core/candidate_select.h"
#include "core/exact_select.h"
#include "core/interval_sums.h"
#include "core/phase_checks.h"
#include "core/magnitude_key.h"
#include "entrograd/keep_count.h"

namespace entrograd {

namespace {
constexpr absl::string_view kAccumulatedName =
    "accumulated gradient (residual + gradient)";

// x * factor in double, rounded once to float32 (the same bytes on every
// rank and every run).
float ScaledValue(float x, double factor) {
  return static_cast<float>(static_cast<double>(x) * factor);
}
}  // namespace

absl::StatusOr<std::unique_ptr<LayerCompressor>> LayerCompressor::Create(
    int64_t numel, const CompressionOptions& options) {
  ENTROGRAD_RETURN_IF_ERROR(ValidateCompressionOptions(options));
  ENTROGRAD_RETURN_IF_ERROR(CheckLayerNumel(numel));
  return std::unique_ptr<LayerCompressor>(new LayerCompressor(numel, options));
}

LayerCompressor::LayerCompressor(int64_t numel,
                                 const CompressionOptions& options)
    : numel_(numel),
      options_(options),
      sent_whole_(IsSentWhole(numel, options)),
      residual_(numel, 0.0f),
      velocity_(options.momentum_correction ? numel : 0, 0.0f),
      pending_accumulated_(numel),
      // A layer sent whole never computes a next velocity.
      pending_velocity_(options.momentum_correction && !sent_whole_ ? numel
                                                                     : 0),
      interval_sums_(std::min<int64_t>(options.intervals, numel)) {}

absl::Status LayerCompressor::Compress(absl::Span<const float> gradient,
                                       int64_t step, CompressedLayer* out) {
  ENTROGRAD_RETURN_IF_ERROR(CheckPolicyCompressesAlone(options_.policy));
  ENTROGRAD_RETURN_IF_ERROR(Accumulate(gradient, MaxKeepCount(step)).status());
  return SelectWithPolicy(step, out);
}

int64_t LayerCompressor::MaxKeepCount(int64_t step) const {
  if (numel_ < options_.dense_below) return -1;
  const double density =
      WarmupDensity(options_.rho, options_.warmup_steps, step);
  switch (options_.policy) {
    case KeepPolicy::kEntropy:
      // r = clamp(density * f, r_min, 1) with f <= 1.
      return RoundAndClamp(std::max(density, options_.min_keep_ratio) *
                               static_cast<double>(numel_),
                           1, numel_);
    case KeepPolicy::kTopK:
      return RoundAndClamp(density * static_cast<double>(numel_), 1, numel_);
    default:
      return -1;
  }
}

absl::StatusOr<EntropyStats> LayerCompressor::Accumulate(
    absl::Span<const float> gradient, int64_t max_keep) {
  pending_ = false;
  candidates_valid_ = false;
  if (static_cast<int64_t>(gradient.size()) != numel_) {
    return absl::InvalidArgumentError(
        absl::StrCat("gradient has ", gradient.size(),
                     " elements; this layer has ", numel_));
  }
  AccumulateBuffers buffers;
  buffers.gradient = gradient;
  if (!sent_whole_) {  // else A = u: G and V stay 0 (ALGORITHM.md 5.1)
    buffers.residual = residual_;
    buffers.velocity = velocity_;
    buffers.next_velocity = absl::MakeSpan(pending_velocity_);
  }
  buffers.accumulated = absl::MakeSpan(pending_accumulated_);
  buffers.interval_abs_sums = absl::MakeSpan(interval_sums_);
  buffers.measure_accumulated =
      options_.entropy_of == EntropySource::kAccumulated;
  const float momentum = static_cast<float>(options_.momentum);
  std::optional<CandidateCollector> collector;
  // A layer sent whole is never selected from: no candidates to collect.
  if (!sent_whole_ && max_keep >= 1 && max_keep < numel_) {
    // The bound comes from A at the sample positions, computed here from the
    // inputs with the pass's own arithmetic (bitwise the same values).
    sample_keys_.resize(CandidateSampleCount(numel_));
    for (size_t j = 0; j < sample_keys_.size(); ++j) {
      const int64_t i = CandidateSamplePosition(j, numel_);
      const float increment =
          options_.momentum_correction
              ? NextVelocity(momentum, velocity_[i], gradient[i])
              : gradient[i];
      sample_keys_[j] = MagnitudeKey(Accumulated(residual_[i], increment));
    }
    uint32_t min_key = 0;
    if (CandidateBoundFromSample(&sample_keys_, numel_, max_keep, &min_key)) {
      collector.emplace(min_key, CandidateCapacity(numel_, max_keep),
                        &candidates_);
      buffers.candidates = &*collector;
    }
  }
  AccumulateAndMeasure(buffers, momentum);
  if (collector.has_value()) {
    candidates_valid_ = collector->Finish();
    candidate_k_ = max_keep;
  }

  const int64_t m = static_cast<int64_t>(interval_sums_.size());
  for (int64_t i = 0; i < m; ++i) {
    if (!std::isfinite(interval_sums_[i])) {
      const int64_t begin = IntervalBegin(i, numel_, m);
      const int64_t end = IntervalBegin(i + 1, numel_, m);
      if (buffers.measure_accumulated) {
        // A sum of |A| is non-finite also when finite inputs overflowed A.
        // A non-finite gradient anywhere is named first, as when the sums
        // are of |u| (and as on the CUDA path).
        const auto bad =
            std::find_if(gradient.begin(), gradient.end(),
                         [](float x) { return !std::isfinite(x); });
        if (bad != gradient.end()) {
          const int64_t j = bad - gradient.begin();
          return NonFiniteError("gradient", gradient, j, j + 1);
        }
        return NonFiniteError(kAccumulatedName, pending_accumulated_, begin,
                              end);
      }
      return NonFiniteError("gradient", gradient, begin, end);
    }
  }
  pending_entropy_ = EntropyFromIntervalSums(interval_sums_, numel_);
  pending_ = true;
  return pending_entropy_;
}

absl::Status LayerCompressor::SelectWithPolicy(int64_t step,
                                               CompressedLayer* out) {
  ENTROGRAD_RETURN_IF_ERROR(CheckPending(pending_, "SelectWithPolicy"));
  const EntropyStats used = EntropyForPolicy(
      pending_entropy_, held_share_, step, options_.share_hold_steps);
  ENTROGRAD_ASSIGN_OR_RETURN(KeepDecision decision,
                             DecideKeepCount(used, numel_, step, options_));
  ENTROGRAD_RETURN_IF_ERROR(SelectWithDecision(decision, step, out));
  held_share_ =
      HeldShareAfter(used, held_share_, step, options_.share_hold_steps);
  return absl::OkStatus();
}

absl::Status LayerCompressor::SelectWithDecision(const KeepDecision& decision,
                                                 int64_t step,
                                                 CompressedLayer* out) {
  if (decision.dense) {
    ENTROGRAD_RETURN_IF_ERROR(CheckAccumulatedFinite());
    return Commit(step, decision.keep_ratio, /*dense=*/true, out);
  }
  if (decision.k < 0) {  // constant threshold: k known only after comparing
    // Checked here so that the error names A, as on every other path.
    ENTROGRAD_RETURN_IF_ERROR(CheckAccumulatedFinite());
    ENTROGRAD_RETURN_IF_ERROR(SelectAtLeastMagnitude(
        pending_accumulated_, static_cast<float>(options_.threshold),
        &out->indices));
    const double ratio = static_cast<double>(out->indices.size()) /
                         static_cast<double>(numel_);
    return Commit(step, ratio, /*dense=*/false, out);
  }
  return SelectAndCommit(decision.k, step, decision.keep_ratio, out);
}

absl::Status LayerCompressor::SelectTopK(int64_t k, int64_t step,
                                         double keep_ratio,
                                         CompressedLayer* out) {
  ENTROGRAD_RETURN_IF_ERROR(CheckPending(pending_, "SelectTopK"));
  ENTROGRAD_RETURN_IF_ERROR(CheckKeepCount(k, numel_));
  ENTROGRAD_RETURN_IF_ERROR(CheckWholeLayerKeepCount(sent_whole_, k, numel_));
  if (k == numel_) {
    ENTROGRAD_RETURN_IF_ERROR(CheckAccumulatedFinite());
    return Commit(step, 1.0, /*dense=*/true, out);
  }
  return SelectAndCommit(k, step, keep_ratio, out);
}

absl::Status LayerCompressor::SelectAndCommit(int64_t k, int64_t step,
                                              double keep_ratio,
                                              CompressedLayer* out) {
  // A finite gradient can still overflow A (G + u beyond the float range);
  // selection sees every Inf and reports it before anything is committed.
  if (candidates_valid_ && k >= 1 && k <= candidate_k_ &&
      static_cast<int64_t>(candidates_.size()) >= k) {
    ENTROGRAD_RETURN_IF_ERROR(CheckCandidatesFinite(
        kAccumulatedName, pending_accumulated_, candidates_));
    SelectAmongCandidates(candidates_, k, &scratch_.ranked_keys,
                          &out->indices);
  } else {
    ENTROGRAD_RETURN_IF_ERROR(SelectLargestExact(kAccumulatedName,
                                                 pending_accumulated_, k,
                                                 &scratch_, &out->indices));
  }
  return Commit(step, keep_ratio, /*dense=*/false, out);
}

absl::Status LayerCompressor::CheckAccumulatedFinite() const {
  const std::vector<float>& a = pending_accumulated_;
  for (size_t i = 0; i < a.size(); ++i) {
    if (MagnitudeKey(a[i]) >= kNonFiniteKey) {
      return NonFiniteError(kAccumulatedName, a, i, i + 1);
    }
  }
  return absl::OkStatus();
}

absl::Status LayerCompressor::Commit(int64_t step, double keep_ratio,
                                     bool dense, CompressedLayer* out) {
  out->step = step;
  out->numel = numel_;
  out->entropy = pending_entropy_;
  out->keep_ratio = keep_ratio;
  out->dense = dense;
  if (dense) {
    // Everything is sent: G and V become zero (5.6 with every entry
    // selected). A layer sent whole never left them anything else.
    out->k = numel_;
    out->indices.clear();
    out->values.assign(pending_accumulated_.begin(),
                       pending_accumulated_.end());
    if (!sent_whole_) {
      std::fill(residual_.begin(), residual_.end(), 0.0f);
      std::fill(velocity_.begin(), velocity_.end(), 0.0f);
    }
    pending_ = false;
    return absl::OkStatus();
  }
  const size_t k = out->indices.size();
  out->k = static_cast<int64_t>(k);
  out->values.resize(k);
  float* accumulated = pending_accumulated_.data();
  for (size_t j = 0; j < k; ++j) {
    const uint32_t index = out->indices[j];
    out->values[j] = accumulated[index];
    accumulated[index] = 0.0f;
  }
  if (options_.momentum_correction) {
    for (uint32_t index : out->indices) pending_velocity_[index] = 0.0f;
    velocity_.swap(pending_velocity_);
  }
  residual_.swap(pending_accumulated_);
  pending_ = false;
  candidates_valid_ = false;
  return absl::OkStatus();
}

absl::Status LayerCompressor::RestoreState(absl::Span<const float> residual,
                                           absl::Span<const float> velocity) {
  if (static_cast<int64_t>(residual.size()) != numel_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "residual has ", residual.size(), " elements; expected ", numel_));
  }
  const size_t expected_velocity = options_.momentum_correction ? numel_ : 0;
  if (velocity.size() != expected_velocity) {
    return absl::InvalidArgumentError(
        absl::StrCat("velocity has ", velocity.size(), " elements; expected ",
                     expected_velocity, options_.momentum_correction
                                            ? ""
                                            : " (no momentum correction)"));
  }
  for (size_t i = 0; i < residual.size(); ++i) {
    if (!std::isfinite(residual[i])) {
      return NonFiniteError("residual", residual, i, i + 1);
    }
  }
  for (size_t i = 0; i < velocity.size(); ++i) {
    if (!std::isfinite(velocity[i])) {
      return NonFiniteError("velocity", velocity, i, i + 1);
    }
  }
  if (sent_whole_) {
    ENTROGRAD_RETURN_IF_ERROR(CheckWholeLayerStateIsZero("residual", residual));
    ENTROGRAD_RETURN_IF_ERROR(CheckWholeLayerStateIsZero("velocity", velocity));
  } else {  // a layer sent whole keeps its +0.0 (a -0.0 is zero too)
    residual_.assign(residual.begin(), residual.end());
    velocity_.assign(velocity.begin(), velocity.end());
  }
  pending_ = false;
  return absl::OkStatus();
}

absl::Status LayerCompressor::CheckScaleState(double factor) const {
  if (!(factor > 0.0) || !std::isfinite(factor)) {
    return absl::InvalidArgumentError(
        absl::StrCat("scale factor ", factor, "; expected finite and > 0"));
  }
  if (pending_) {
    return absl::FailedPreconditionError(
        "an accumulation is pending: scale the state between steps");
  }
  for (const auto& [name, values] :
       {std::make_pair("residual", &residual_),
        std::make_pair("velocity", &velocity_)}) {
    for (size_t i = 0; i < values->size(); ++i) {
      if (!std::isfinite(ScaledValue((*values)[i], factor))) {
        return absl::InvalidArgumentError(absl::StrCat(
            name, "[", i, "] = ", (*values)[i], " times ", factor,
            " is not finite in float32"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status LayerCompressor::ScaleState(double factor) {
  ENTROGRAD_RETURN_IF_ERROR(CheckScaleState(factor));
  ScaleCheckedState(factor);
  return absl::OkStatus();
}

void LayerCompressor::ScaleCheckedState(double factor) {
  for (std::vector<float>* values : {&residual_, &velocity_}) {
    for (float& value : *values) value = ScaledValue(value, factor);
  }
}

absl::Status LayerCompressor::KeepUnapplied(absl::Span<const uint32_t> indices,
                                            absl::Span<const float> values) {
  if (sent_whole_) {
    return absl::FailedPreconditionError(
        "a layer sent whole keeps no residual to put unapplied entries in");
  }
  if (pending_) {
    return absl::FailedPreconditionError(
        "an accumulation is pending: put unapplied entries back before the "
        "next step's Accumulate");
  }
  if (indices.size() != values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unapplied entries: ", indices.size(), " indices but ",
                     values.size(), " values"));
  }
  // Checked in full before anything changes.
  for (size_t j = 0; j < indices.size(); ++j) {
    const uint32_t index = indices[j];
    if (index >= numel_ || (j > 0 && index <= indices[j - 1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unapplied entry ", j, ": index ", index,
          index >= numel_ ? " is not below numel " : " is not above the one "
                                                     "before it; numel ",
          numel_));
    }
    if (!std::isfinite(residual_[index] + values[j])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unapplied entry ", j, " (index ", index, "): value ", values[j],
          " added to the residual ", residual_[index], " is not finite"));
    }
  }
  for (size_t j = 0; j < indices.size(); ++j) {
    residual_[indices[j]] += values[j];
  }
  return absl::OkStatus();
}

absl::Status LayerCompressor::RestoreHeldShare(const HeldShare& held) {
  ENTROGRAD_RETURN_IF_ERROR(ValidateHeldShare(held));
  held_share_ = held;
  return absl::OkStatus();
}

}  // namespace entrograd
