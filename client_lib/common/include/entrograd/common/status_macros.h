// Small status macros: the Abseil we build against (20220623) predates
// absl/status/status_macros.h, so we keep our own. Private to entrograd.
#ifndef ENTROGRAD_COMMON_STATUS_MACROS_H_
#define ENTROGRAD_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Evaluates `expr` (an absl::Status); returns it from the calling function
// when it is not OK.
#define ENTROGRAD_RETURN_IF_ERROR(expr)                  \
  do {                                                   \
    ::absl::Status entrograd_status_ = (expr);           \
    if (!entrograd_status_.ok()) return entrograd_status_; \
  } while (0)

#define ENTROGRAD_STATUS_CONCAT_INNER_(a, b) a##b
#define ENTROGRAD_STATUS_CONCAT_(a, b) ENTROGRAD_STATUS_CONCAT_INNER_(a, b)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status from
// the calling function, else moves the value into `lhs` (a declaration such
// as `auto x` or an existing lvalue).
#define ENTROGRAD_ASSIGN_OR_RETURN(lhs, rexpr)                         \
  ENTROGRAD_ASSIGN_OR_RETURN_IMPL_(                                    \
      ENTROGRAD_STATUS_CONCAT_(entrograd_statusor_, __LINE__), lhs, rexpr)

#define ENTROGRAD_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                     \
  if (!statusor.ok()) return std::move(statusor).status();     \
  lhs = std::move(statusor).value()

#endif  // ENTROGRAD_COMMON_STATUS_MACROS_H_
