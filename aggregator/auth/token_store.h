// Bearer tokens (docs/DESIGN.md "Security"): a token grants one job, or every job
// when it is the shared token. Checked on the stream's metadata before any
// state is touched; the health service needs none.
//
// Token file: one "JOB_ID TOKEN" pair per line; "* TOKEN" is a shared token
// for every job; blank lines and lines starting with '#' are ignored.
//
// Thread safety: immutable after Load; Authorize is safe concurrently.
#ifndef ENTROGRAD_AGGREGATOR_AUTH_TOKEN_STORE_H_
#define ENTROGRAD_AGGREGATOR_AUTH_TOKEN_STORE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace entrograd::aggregator {

class TokenStore {
 public:
  // Errors: NOT_FOUND / PERMISSION_DENIED when the file cannot be read;
  // INVALID_ARGUMENT naming the line for a malformed line, a repeated token
  // or an empty file.
  static absl::StatusOr<TokenStore> LoadFile(const std::string& path);
  // From the file's text (tests).
  static absl::StatusOr<TokenStore> Parse(absl::string_view text,
                                          absl::string_view source);

  // `authorization` is the "authorization" metadata value, "Bearer TOKEN"
  // (the scheme in any case, RFC 7235). Returns the job the token grants, or
  // std::nullopt for a shared token. The token is compared with every
  // configured token in time independent of where they differ, so response
  // times do not reveal a token's prefix.
  // Errors: UNAUTHENTICATED when missing, malformed or unknown.
  absl::StatusOr<std::optional<std::string>> Authorize(
      std::optional<absl::string_view> authorization) const;

 private:
  struct Grant {
    std::string token;
    std::string job;  // "*" = every job
  };
  std::vector<Grant> grants_;
};

}  // namespace entrograd::aggregator

#endif  // ENTROGRAD_AGGREGATOR_AUTH_TOKEN_STORE_H_
