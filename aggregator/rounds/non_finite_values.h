// Whether a received payload carries a NaN or Inf value, read straight from
// its value bytes. The registry asks this when decoding failed, to tell a
// non-finite contribution (which aborts its round for every rank) from a
// malformed one (refused for its sender only) by the bytes themselves rather
// than by the decoder's error text.
#ifndef ENTROGRAD_AGGREGATOR_ROUNDS_NON_FINITE_VALUES_H_
#define ENTROGRAD_AGGREGATOR_ROUNDS_NON_FINITE_VALUES_H_

#include "entrograd/v1/aggregator.pb.h"

namespace entrograd::aggregator {

// True when some whole value in payload.value_bytes, read as
// payload.value_type (little-endian), is NaN or +-Inf. False for an unknown
// value type; a trailing partial value is ignored. Never reads out of
// bounds. Thread-safe (pure).
bool HoldsNonFiniteValue(const v1::SparsePayload& payload);

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_ROUNDS_NON_FINITE_VALUES_H_
