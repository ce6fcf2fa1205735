// Which failures the client retries, per the status table at the top of
// protos/entrograd/v1/aggregator.proto. One place, so the shard stream's
// reconnect loop and its RoundError handling agree with the protocol.
#ifndef ENTROGRAD_TRANSPORT_RETRY_RULES_H_
#define ENTROGRAD_TRANSPORT_RETRY_RULES_H_

#include "absl/status/status.h"
#include "entrograd/v1/aggregator.pb.h"

namespace entrograd {

// Whether a stream that ended (or a Join refused) with `code` is worth a
// reconnect with backoff: OK (the shard drained), CANCELLED by the peer,
// UNAVAILABLE, DEADLINE_EXCEEDED, ALREADY_EXISTS (our previous stream still
// lingers on the shard), RESOURCE_EXHAUSTED (job quota), and the transport
// failures UNKNOWN / INTERNAL. Everything else (INVALID_ARGUMENT,
// FAILED_PRECONDITION, UNAUTHENTICATED, PERMISSION_DENIED, ABORTED = this
// rank was replaced by a newer incarnation, ...) needs the worker fixed.
inline bool IsRetryableStreamEnd(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnavailable:
      return true;
    default:
      return false;
  }
}

// Whether a RoundError refusing one of our contributions means "send the
// same contribution again later": OUT_OF_RANGE (step too far ahead of the
// slowest rank) and RESOURCE_EXHAUSTED (the shard's memory quota or rounds
// limit), except RESOURCE_EXHAUSTED with reason MERGED_TOO_LARGE: the same
// contributions always merge to the same too-large update. Decided on the
// code and the machine-readable reason, never on the message text.
inline bool IsRetryableRoundError(absl::StatusCode code,
                                  v1::RoundErrorReason reason) {
  if (reason == v1::ROUND_ERROR_REASON_MERGED_TOO_LARGE) return false;
  return code == absl::StatusCode::kOutOfRange ||
         code == absl::StatusCode::kResourceExhausted;
}

}  // namespace entrograd

#endif  // ENTROGRAD_TRANSPORT_RETRY_RULES_H_
