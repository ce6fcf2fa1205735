// `entrograd-cli inspect`: what the compressor would do with each layer's
// gradient on a first training step, and what that costs on the wire.
//
// The keep decision and the selection are the library's own (LayerCompressor
// with a zero residual and no momentum, as on step 0), and the byte counts
// come from the codec, so the report shows what training would send rather
// than a re-derivation of it.
//
// Thread safety: thread-compatible; no shared state.
#ifndef ENTROGRAD_TOOLS_ENTROGRAD_CLI_INSPECT_COMMAND_H_
#define ENTROGRAD_TOOLS_ENTROGRAD_CLI_INSPECT_COMMAND_H_

#include <array>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "entrograd/codec.h"
#include "entrograd/compression_options.h"
#include "entrograd/entropy.h"

namespace entrograd::cli {

inline constexpr size_t kIndexEncodingCount = std::size(kAllIndexEncodings);

// What `inspect` reports for one layer.
struct LayerInspection {
  std::string name;       // the file's base name
  int64_t numel = 0;      // elements of the layer
  EntropyStats entropy;   // interval entropy of the gradient
  double keep_ratio = 0;  // CompressedLayer::keep_ratio (k / n for the
                          // threshold, dense and entropy_budget policies)
  int64_t k = 0;          // entries sent (numel when the layer goes dense)
  bool dense = false;     // the whole layer is sent
  // Wire bytes (index bytes + float32 value bytes) of the selected update
  // under each index encoding, in kAllIndexEncodings order. A dense layer is
  // costed with EncodeDense: its sparse encodings carry the nonzeros.
  std::array<int64_t, kIndexEncodingCount> encoded_bytes{};
  // The encoding the codec's automatic choice picks (fewest bytes).
  IndexEncoding auto_encoding = IndexEncoding::kRawU32;
};

// Inspects one layer's `gradient`. `keep_count` overrides the policy's k
// (required for kEntropyBudget, whose k depends on every layer; see
// InspectFiles). Errors: INVALID_ARGUMENT for an empty or too long gradient,
// a NaN or Inf, invalid options or keep_count outside [0, numel];
// FAILED_PRECONDITION for kEntropyBudget without keep_count.
absl::StatusOr<LayerInspection> InspectGradient(
    absl::string_view name, absl::Span<const float> gradient,
    const CompressionOptions& options,
    std::optional<int64_t> keep_count = std::nullopt);

// Reads (ReadArrayFile) and inspects every file, in order. Under
// kEntropyBudget the keep counts come from BudgetKeepCounts over all files
// with density options.budget_density, layers below options.dense_below left
// out and sent dense; the files are then read twice, so that memory holds
// one layer at a time. Errors: the first file's error, its message starting
// with the path.
absl::StatusOr<std::vector<LayerInspection>> InspectFiles(
    absl::Span<const std::string> paths, const CompressionOptions& options);

}  // namespace entrograd::cli

#endif  // ENTROGRAD_TOOLS_ENTROGRAD_CLI_INSPECT_COMMAND_H_
