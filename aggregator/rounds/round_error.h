// RoundError messages and the machine-readable reason behind them
// (entrograd.v1.RoundErrorReason). The registry decides the reason where it
// knows it and attaches it to the absl::Status it returns or delivers, so
// the reactor that turns a refused update into a RoundError needs no text
// matching to fill it in.
#ifndef ENTROGRAD_AGGREGATOR_ROUNDS_ROUND_ERROR_H_
#define ENTROGRAD_AGGREGATOR_ROUNDS_ROUND_ERROR_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "entrograd/v1/aggregator.pb.h"

namespace entrograd::aggregator {

// `status` with `reason` attached as a status payload (kept by copies of the
// status, ignored by everything else). OK stays OK. Thread-safe (pure).
absl::Status WithRoundErrorReason(absl::Status status,
                                  v1::RoundErrorReason reason);

// The reason attached by WithRoundErrorReason, or UNSPECIFIED.
v1::RoundErrorReason RoundErrorReasonOf(const absl::Status& status);

// A RoundError for round (step, layer) carrying `status`'s code, message and
// reason. `status` must not be OK.
std::shared_ptr<const v1::AggregatorMessage> MakeRoundError(
    int64_t step, uint32_t layer, const absl::Status& status);

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_ROUNDS_ROUND_ERROR_H_
