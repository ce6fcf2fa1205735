// Typed reads of one JSON object's members, for the parsers of the worker's
// events and of summary.json. The first error is kept and names the member
// ("\"step\" event: \"loss\" is missing"), so a writer's bug is reported
// precisely; later reads then return defaults and record nothing.
//
// A member that is absent or null counts as absent: required reads record an
// error, optional reads return nullopt. Doubles are read with DoubleFromJson
// (numbers, or "NaN" / "Infinity" / "-Infinity"); integers must be numbers
// with an integral value that fits int64.
//
// Thread safety: one reader per thread; `object` must not change while read.
#ifndef ENTROGRAD_WORKERS_RUN_FORMAT_JSON_FIELDS_H_
#define ENTROGRAD_WORKERS_RUN_FORMAT_JSON_FIELDS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "workers/run_format/json_double.h"

namespace entrograd::run_format {

class JsonFieldReader {
 public:
  // `object` (a JSON object, not owned) must outlive the reader. `context`
  // starts every error message, e.g. "\"step\" event".
  JsonFieldReader(const Json& object, std::string context);

  double Double(absl::string_view key);
  std::optional<double> OptionalDouble(absl::string_view key);
  int64_t Integer(absl::string_view key);
  std::optional<int64_t> OptionalInteger(absl::string_view key);
  std::string String(absl::string_view key);
  std::optional<std::string> OptionalString(absl::string_view key);
  bool Bool(absl::string_view key);

  // True when `key` is present and not null.
  bool Has(absl::string_view key) const;
  // Records "\"key\" must be <requirement>" unless `condition` holds.
  void Require(bool condition, absl::string_view key,
               absl::string_view requirement);

  // OK, or INVALID_ARGUMENT with the first error.
  const absl::Status& status() const { return status_; }

 private:
  // The member `key` when present and not null; else records "is missing"
  // when `required`.
  const Json* Find(absl::string_view key, bool required);
  void Fail(absl::string_view key, absl::string_view what);

  const Json& object_;
  std::string context_;
  absl::Status status_;
};

}  // namespace entrograd::run_format

#endif  // ENTROGRAD_WORKERS_RUN_FORMAT_JSON_FIELDS_H_
