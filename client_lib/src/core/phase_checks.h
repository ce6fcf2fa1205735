// The argument and order checks that every compressor (the CPU
// LayerCompressor and the CUDA DeviceLayerCompressor) makes, in one place so
// that both reject the same calls with the same words. Private to the
// client library.
#ifndef ENTROGRAD_CORE_PHASE_CHECKS_H_
#define ENTROGRAD_CORE_PHASE_CHECKS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/interval_sums.h"
#include "entrograd/compression_options.h"

namespace entrograd {

// INVALID_ARGUMENT unless 1 <= numel <= 2^32 - 1 (indices travel as uint32).
inline absl::Status CheckLayerNumel(int64_t numel) {
  if (numel < 1 || static_cast<uint64_t>(numel) > kMaxLayerElements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "numel = ", numel, "; expected 1 <= numel <= ", kMaxLayerElements));
  }
  return absl::OkStatus();
}

// FAILED_PRECONDITION for the one policy that cannot compress a layer alone.
inline absl::Status CheckPolicyCompressesAlone(KeepPolicy policy) {
  if (policy == KeepPolicy::kEntropyBudget) {
    return absl::FailedPreconditionError(
        "the entropy_budget policy needs every layer's entropy first: call "
        "Accumulate on every layer, BudgetKeepCounts, then SelectTopK");
  }
  return absl::OkStatus();
}

// FAILED_PRECONDITION when `call` (a phase-2 method) has no pending
// Accumulate to select from.
inline absl::Status CheckPending(bool pending, absl::string_view call) {
  if (!pending) {
    return absl::FailedPreconditionError(
        absl::StrCat(call, " called without a pending Accumulate"));
  }
  return absl::OkStatus();
}

// INVALID_ARGUMENT unless 0 <= k <= numel.
inline absl::Status CheckKeepCount(int64_t k, int64_t numel) {
  if (k < 0 || k > numel) {
    return absl::InvalidArgumentError(
        absl::StrCat("k = ", k, " is out of range [0, ", numel, "]"));
  }
  return absl::OkStatus();
}

// INVALID_ARGUMENT when a layer sent whole (IsSentWhole) is asked for fewer
// than all of its entries: it keeps no residual, so whatever it did not send
// would be lost.
inline absl::Status CheckWholeLayerKeepCount(bool sent_whole, int64_t k,
                                             int64_t numel) {
  if (sent_whole && k != numel) {
    return absl::InvalidArgumentError(absl::StrCat(
        "k = ", k, ", but this layer is sent whole (policy dense or fewer "
        "than dense_below elements): k must be ", numel));
  }
  return absl::OkStatus();
}

// INVALID_ARGUMENT naming the first nonzero element of `state` (what: the
// residual or the velocity) of a layer sent whole, whose G and V stay 0
// (ALGORITHM.md 5.1): a checkpoint that says otherwise was written under
// other options. +0.0 and -0.0 are both zero.
inline absl::Status CheckWholeLayerStateIsZero(absl::string_view what,
                                               absl::Span<const float> state) {
  for (size_t i = 0; i < state.size(); ++i) {
    if (state[i] != 0.0f) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " of a layer sent whole (policy dense or fewer than "
          "dense_below elements) must be 0; element ", i, " is ", state[i]));
    }
  }
  return absl::OkStatus();
}

}  // namespace entrograd

#endif  // ENTROGRAD_CORE_PHASE_CHECKS_H_
