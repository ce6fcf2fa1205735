// GoogleMock matchers for absl::Status / absl::StatusOr. Abseil 20220623 has
// no status_matchers.h, so tests use these.
#ifndef ENTROGRAD_TESTS_SUPPORT_STATUS_MATCHERS_H_
#define ENTROGRAD_TESTS_SUPPORT_STATUS_MATCHERS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace entrograd::testing {

inline const absl::Status& GetStatus(const absl::Status& status) {
  return status;
}
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

// Matches an OK absl::Status or StatusOr.
MATCHER(IsOk, "is OK") {
  const absl::Status& status = GetStatus(arg);
  if (!status.ok()) *result_listener << "status is " << status;
  return status.ok();
}

// Matches a status with `code` whose message contains `substring`.
MATCHER_P2(StatusIs, code, substring,
           std::string("has code ") + absl::StatusCodeToString(code) +
               " and a message containing \"" + std::string(substring) +
               "\"") {
  const absl::Status& status = GetStatus(arg);
  *result_listener << "status is " << status;
  return status.code() == code &&
         status.message().find(substring) != absl::string_view::npos;
}

}  // namespace entrograd::testing

#define ENTROGRAD_ASSERT_OK(expr) \
  ASSERT_THAT((expr), ::entrograd::testing::IsOk())
#define ENTROGRAD_EXPECT_OK(expr) \
  EXPECT_THAT((expr), ::entrograd::testing::IsOk())

// Asserts that `rexpr` (a StatusOr) is OK and moves its value into `lhs`.
#define ENTROGRAD_ASSERT_OK_AND_ASSIGN(lhs, rexpr)                       \
  ENTROGRAD_ASSERT_OK_AND_ASSIGN_IMPL_(                                  \
      ENTROGRAD_TEST_CONCAT_(entrograd_test_statusor_, __LINE__), lhs, rexpr)
#define ENTROGRAD_TEST_CONCAT_INNER_(a, b) a##b
#define ENTROGRAD_TEST_CONCAT_(a, b) ENTROGRAD_TEST_CONCAT_INNER_(a, b)
#define ENTROGRAD_ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                         \
  ASSERT_THAT(statusor, ::entrograd::testing::IsOk());             \
  lhs = std::move(statusor).value()

#endif  // ENTROGRAD_TESTS_SUPPORT_STATUS_MATCHERS_H_
