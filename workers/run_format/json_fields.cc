#include "workers/run_format/json_fields.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace entrograd::run_format {

namespace {

// Integers travel as JSON numbers; a double is an exact integer only below
// 2^53, far above any step or byte count here.
constexpr double kLargestExactInteger = 9007199254740992.0;

}  // namespace

JsonFieldReader::JsonFieldReader(const Json& object, std::string context)
    : object_(object), context_(std::move(context)) {}

const Json* JsonFieldReader::Find(absl::string_view key, bool required) {
  const auto it = object_.find(std::string(key));
  if (it == object_.end() || it->is_null()) {
    if (required) Fail(key, "is missing");
    return nullptr;
  }
  return &*it;
}

void JsonFieldReader::Fail(absl::string_view key, absl::string_view what) {
  if (status_.ok()) {
    status_ = absl::InvalidArgumentError(
        absl::StrCat(context_, ": \"", key, "\" ", what));
  }
}

std::optional<double> JsonFieldReader::OptionalDouble(absl::string_view key) {
  const Json* value = Find(key, /*required=*/false);
  if (value == nullptr) return std::nullopt;
  std::optional<double> number = DoubleFromJson(*value);
  if (!number.has_value()) Fail(key, "is not a number");
  return number;
}

double JsonFieldReader::Double(absl::string_view key) {
  if (Find(key, /*required=*/true) == nullptr) return 0;
  return OptionalDouble(key).value_or(0);
}

std::optional<int64_t> JsonFieldReader::OptionalInteger(absl::string_view key) {
  const Json* value = Find(key, /*required=*/false);
  if (value == nullptr) return std::nullopt;
  if (value->is_number_integer()) {
    // number_unsigned above int64's range does not fit.
    if (value->is_number_unsigned() &&
        value->get<uint64_t>() >
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      Fail(key, "is not an integer");
      return std::nullopt;
    }
    return value->get<int64_t>();
  }
  if (!value->is_number()) {
    Fail(key, "is not a number");
    return std::nullopt;
  }
  // 42.0 is accepted: some writers print every number as a double.
  const double number = value->get<double>();
  if (!std::isfinite(number) || number != std::trunc(number) ||
      std::fabs(number) > kLargestExactInteger) {
    Fail(key, "is not an integer");
    return std::nullopt;
  }
  return static_cast<int64_t>(number);
}

int64_t JsonFieldReader::Integer(absl::string_view key) {
  if (Find(key, /*required=*/true) == nullptr) return 0;
  return OptionalInteger(key).value_or(0);
}

std::optional<std::string> JsonFieldReader::OptionalString(
    absl::string_view key) {
  const Json* value = Find(key, /*required=*/false);
  if (value == nullptr) return std::nullopt;
  if (!value->is_string()) {
    Fail(key, "is not a string");
    return std::nullopt;
  }
  return value->get<std::string>();
}

std::string JsonFieldReader::String(absl::string_view key) {
  if (Find(key, /*required=*/true) == nullptr) return "";
  return OptionalString(key).value_or("");
}

bool JsonFieldReader::Bool(absl::string_view key) {
  const Json* value = Find(key, /*required=*/true);
  if (value == nullptr) return false;
  if (!value->is_boolean()) {
    Fail(key, "is not a boolean");
    return false;
  }
  return value->get<bool>();
}

bool JsonFieldReader::Has(absl::string_view key) const {
  const auto it = object_.find(std::string(key));
  return it != object_.end() && !it->is_null();
}

void JsonFieldReader::Require(bool condition, absl::string_view key,
                              absl::string_view requirement) {
  if (!condition) Fail(key, absl::StrCat("must be ", requirement));
}

}  // namespace entrograd::run_format
