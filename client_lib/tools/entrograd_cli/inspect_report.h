// Rendering of `inspect` results: an aligned table for people, one JSON
// object for programs.
//
// Thread safety: pure functions.
#ifndef ENTROGRAD_TOOLS_ENTROGRAD_CLI_INSPECT_REPORT_H_
#define ENTROGRAD_TOOLS_ENTROGRAD_CLI_INSPECT_REPORT_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "entrograd/compression_options.h"
#include "entrograd_cli/inspect_command.h"

namespace entrograd::cli {

// A line naming the policy and its parameters, a table with one row per
// layer (columns aligned; bytes per index encoding and the automatic
// choice), and a total line comparing the automatic choice with sending
// every layer dense. Ends with a newline.
std::string FormatInspectTable(absl::Span<const LayerInspection> layers,
                               const CompressionOptions& options);

// {"layers": [{"name": ..., "numel": ..., "entropy": ...,
//   "normalized_entropy": ..., "effective_fraction": ..., "keep_ratio": ...,
//   "k": ..., "encoded_bytes": {"raw_u32": ..., "delta_varint": ...,
//   "bitmap": ..., "dense": ...}, "auto_encoding": "..."}, ...]}
// Pretty-printed (two-space indent), members in this order, ending with a
// newline. Doubles in the shortest form that reads back exactly; they are
// finite (entropies and fractions of finite data). Bytes of a file name
// that are not UTF-8 become U+FFFD.
std::string FormatInspectJson(absl::Span<const LayerInspection> layers);

}  // namespace entrograd::cli

#endif  // ENTROGRAD_TOOLS_ENTROGRAD_CLI_INSPECT_REPORT_H_
