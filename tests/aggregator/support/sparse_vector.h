// One rank's sparse contribution to a layer, as the aggregator and client
// tests build them, and its f32 encoding.
#ifndef ENTROGRAD_TESTS_AGGREGATOR_SUPPORT_SPARSE_VECTOR_H_
#define ENTROGRAD_TESTS_AGGREGATOR_SUPPORT_SPARSE_VECTOR_H_

#include <cstdint>
#include <vector>

#include "entrograd/codec.h"

namespace entrograd::testing {

// `values[j]` at `indices[j]`; indices strictly ascending and < numel.
struct SparseVector {
  uint64_t numel = 0;
  std::vector<uint32_t> indices;
  std::vector<float> values;
};

// f32 encoding of `vector` with the codec's automatic index encoding.
// Aborts the test binary when the codec refuses it (a broken test input).
EncodedPayload EncodeOrDie(const SparseVector& vector);

}  // namespace entrograd::testing

#endif  // ENTROGRAD_TESTS_AGGREGATOR_SUPPORT_SPARSE_VECTOR_H_
