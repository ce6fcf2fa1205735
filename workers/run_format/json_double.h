// How a training run's JSON spells a double, in one place: the worker's event
// lines (worker_event.h) and the launcher's summary.json (run_summary.h)
// write and read every double through these functions.
//
// JSON has no NaN or infinity, and a diverged loss must stay distinct from an
// absent value (null). The three non-finite values are therefore written as
// the strings "NaN", "Infinity" and "-Infinity", as protobuf's JSON mapping
// writes float and double fields. Readers turn them back with Python's
// float(), JavaScript's Number() or DoubleFromJson below. Finite values are
// plain JSON numbers in the shortest form that reads back to the same double.
//
// Thread safety: pure functions.
#ifndef ENTROGRAD_WORKERS_RUN_FORMAT_JSON_DOUBLE_H_
#define ENTROGRAD_WORKERS_RUN_FORMAT_JSON_DOUBLE_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace entrograd::run_format {

// Objects keep their members in insertion order, so files read in the order
// their writers list the fields.
using Json = nlohmann::ordered_json;

// `value` as JSON: a number when finite, else "NaN", "Infinity" or
// "-Infinity".
Json JsonDouble(double value);

// `value` as JsonDouble, or null when absent.
Json OptionalDouble(const std::optional<double>& value);

// The double `json` holds: any JSON number, or one of the three strings
// above. nullopt for everything else (null, other strings, objects, ...).
std::optional<double> DoubleFromJson(const Json& json);

// `text` parsed as one JSON object. INVALID_ARGUMENT, starting with
// `what` ("summary.json"), when it is not JSON ("<what>: not JSON: ...") or
// not an object ("<what>: not a JSON object").
absl::StatusOr<Json> ParseJsonObject(absl::string_view text,
                                     absl::string_view what);

// `json` as text; `indent` < 0 writes one line. Strings that are not valid
// UTF-8 get U+FFFD for the bad bytes instead of failing, so a path or an
// error message with stray bytes still makes a valid line.
std::string DumpJson(const Json& json, int indent = -1);

}  // namespace entrograd::run_format

#endif  // ENTROGRAD_WORKERS_RUN_FORMAT_JSON_DOUBLE_H_
