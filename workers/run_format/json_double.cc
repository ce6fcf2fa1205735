#include "workers/run_format/json_double.h"

#include <cmath>
#include <limits>

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

}  // namespace entrograd::run_format
