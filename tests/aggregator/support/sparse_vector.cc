#include "aggregator/support/sparse_vector.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace entrograd::testing {

EncodedPayload EncodeOrDie(const SparseVector& vector) {
  absl::StatusOr<EncodedPayload> encoded =
      EncodeSparse(vector.numel, vector.indices, vector.values);
  if (!encoded.ok()) {
    std::fprintf(stderr, "EncodeSparse failed: %s\n",
                 std::string(encoded.status().message()).c_str());
    std::abort();
  }
  return *std::move(encoded);
}

}  // namespace entrograd::testing
