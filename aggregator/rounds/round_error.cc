#include "aggregator/rounds/round_error.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace entrograd::aggregator {

namespace {

// The payload's type URL: absl keys status payloads by a URL.
constexpr char kReasonUrl[] = "type.googleapis.com/entrograd.v1.RoundErrorReason";

}  // namespace

absl::Status WithRoundErrorReason(absl::Status status,
                                  v1::RoundErrorReason reason) {
  if (!status.ok()) {
    status.SetPayload(kReasonUrl, absl::Cord(absl::StrCat(static_cast<int>(reason))));
  }
  return status;
}

v1::RoundErrorReason RoundErrorReasonOf(const absl::Status& status) {
  const auto payload = status.GetPayload(kReasonUrl);
  int value = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &value) ||
      !v1::RoundErrorReason_IsValid(value)) {
    return v1::ROUND_ERROR_REASON_UNSPECIFIED;
  }
  return static_cast<v1::RoundErrorReason>(value);
}

std::shared_ptr<const v1::AggregatorMessage> MakeRoundError(
    int64_t step, uint32_t layer, const absl::Status& status) {
  auto out = std::make_shared<v1::AggregatorMessage>();
  v1::RoundError* error = out->mutable_round_error();
  error->set_step(step);
  error->set_layer_index(layer);
  error->set_code(static_cast<int32_t>(status.code()));
  error->set_message(std::string(status.message()));
  error->set_reason(RoundErrorReasonOf(status));
  return out;
}

}  // namespace entrograd::aggregator
