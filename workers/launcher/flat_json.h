// Flat JSON objects: the one-object-per-line events workers print, and the
// summary.json the launcher writes. Small on purpose (no dependency): the
// parser keeps strings, numbers, booleans and null; a nested array or object
// is parsed and kept only as kNested, so a worker that adds one under a new
// key still has its event read.
//
// Numbers are doubles: integers are exact up to 2^53, far beyond any byte
// count here. NaN, Infinity and -Infinity (what Python's json module and
// many C++ printers write for a diverging loss) are accepted as numbers.
#ifndef ENTROGRAD_WORKERS_LAUNCHER_FLAT_JSON_H_
#define ENTROGRAD_WORKERS_LAUNCHER_FLAT_JSON_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "entrograd/common/json_quote.h"  // JsonQuote, used by FlatJsonWriter

namespace entrograd::launcher {

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kNested };
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
};

// Keys in order; a repeated key keeps its last value.
using FlatJsonObject = std::map<std::string, JsonValue, std::less<>>;

// Parses exactly one JSON object, surrounding whitespace allowed.
// INVALID_ARGUMENT (with the byte offset) for anything else, including a
// truncated line and text after the closing brace.
absl::StatusOr<FlatJsonObject> ParseFlatJsonObject(absl::string_view text);

// `value` as a JSON number: integers without exponent or fraction, others
// in the shortest form that reads back exactly; NaN and infinities as null
// (JSON has no spelling for them).
std::string JsonNumber(double value);

// Builds a pretty-printed flat object, one key per line, in insertion order.
class JsonObjectWriter {
 public:
  JsonObjectWriter& Add(absl::string_view key, double value);
  JsonObjectWriter& Add(absl::string_view key, int64_t value);
  JsonObjectWriter& Add(absl::string_view key, int value) {
    return Add(key, static_cast<int64_t>(value));
  }
  JsonObjectWriter& Add(absl::string_view key, bool value);
  JsonObjectWriter& Add(absl::string_view key, absl::string_view value);
  JsonObjectWriter& Add(absl::string_view key, const char* value) {
    return Add(key, absl::string_view(value));
  }
  JsonObjectWriter& AddNull(absl::string_view key);
  // `json` must be one complete JSON value (an array of objects, say); it is
  // written as it is.
  JsonObjectWriter& AddJson(absl::string_view key, absl::string_view json);

  // The object, ending in a newline.
  std::string Finish() const;

 private:
  void AddRaw(absl::string_view key, absl::string_view json);
  std::string body_;
};

}  // namespace entrograd::launcher

#endif  // ENTROGRAD_WORKERS_LAUNCHER_FLAT_JSON_H_
