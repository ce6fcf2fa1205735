#include "workers/run_format/json_double.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace entrograd::run_format {

namespace {
constexpr char kNan[] = "NaN";
constexpr char kInfinity[] = "Infinity";
constexpr char kMinusInfinity[] = "-Infinity";
}  // namespace

Json JsonDouble(double value) {
  if (std::isnan(value)) return kNan;
  if (std::isinf(value)) return value > 0 ? kInfinity : kMinusInfinity;
  return value;
}

Json OptionalDouble(const std::optional<double>& value) {
  return value.has_value() ? JsonDouble(*value) : Json(nullptr);
}

std::optional<double> DoubleFromJson(const Json& json) {
  if (json.is_number()) return json.get<double>();
  if (!json.is_string()) return std::nullopt;
  const std::string& text = json.get_ref<const std::string&>();
  if (text == kNan) return std::numeric_limits<double>::quiet_NaN();
  if (text == kInfinity) return std::numeric_limits<double>::infinity();
  if (text == kMinusInfinity) return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}

std::string DumpJson(const Json& json, int indent) {
  return json.dump(indent, ' ', /*ensure_ascii=*/false,
                   Json::error_handler_t::replace);
}

absl::StatusOr<Json> ParseJsonObject(absl::string_view text,
                                     absl::string_view what) {
  Json json;
  try {
    json = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& error) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": not JSON: ", error.what()));
  }
  if (!json.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": not a JSON object"));
  }
  return json;
}

}  // namespace entrograd::run_format
