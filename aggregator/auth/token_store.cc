#include "aggregator/auth/token_store.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace entrograd::aggregator {

namespace {

// Whether `a` equals `b`, in time that depends only on their lengths: no
// exit at the first differing byte.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const char x = i < a.size() ? a[i] : 0;
    const char y = i < b.size() ? b[i] : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

}  // namespace

absl::StatusOr<TokenStore> TokenStore::LoadFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) {
    return absl::NotFoundError(
        absl::StrCat("cannot read the token file \"", path, "\""));
  }
  std::stringstream text;
  text << file.rdbuf();
  return Parse(text.str(), path);
}

absl::StatusOr<TokenStore> TokenStore::Parse(absl::string_view text,
                                             absl::string_view source) {
  TokenStore store;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || absl::StartsWith(line, "#")) continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (fields.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", line_number,
                       ": expected \"JOB_ID TOKEN\" (or \"* TOKEN\"), got ",
                       fields.size(), " fields"));
    }
    for (const Grant& grant : store.grants_) {
      if (grant.token == fields[1]) {
        return absl::InvalidArgumentError(absl::StrCat(
            source, ":", line_number, ": this token is already used above"));
      }
    }
    store.grants_.push_back({std::string(fields[1]), std::string(fields[0])});
  }
  if (store.grants_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": no tokens (every stream would be refused)"));
  }
  return store;
}

absl::StatusOr<std::optional<std::string>> TokenStore::Authorize(
    std::optional<absl::string_view> authorization) const {
  if (!authorization.has_value()) {
    return absl::UnauthenticatedError(
        "missing \"authorization: Bearer <token>\" metadata");
  }
  absl::string_view token = *authorization;
  constexpr absl::string_view kScheme = "bearer ";
  if (token.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(token.substr(0, kScheme.size()), kScheme)) {
    return absl::UnauthenticatedError(
        "the authorization metadata is not \"Bearer <token>\"");
  }
  token.remove_prefix(kScheme.size());
  // Every grant is compared, also after a match, so the time taken does not
  // tell which token (or whether any) matched.
  const Grant* match = nullptr;
  for (const Grant& grant : grants_) {
    if (ConstantTimeEquals(token, grant.token)) match = &grant;
  }
  if (match == nullptr) {
    return absl::UnauthenticatedError("unknown bearer token");
  }
  if (match->job == "*") return std::optional<std::string>();
  return std::optional<std::string>(match->job);
}

}  // namespace entrograd::aggregator
