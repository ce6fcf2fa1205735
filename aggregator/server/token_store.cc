#include "aggregator/server/token_store.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace entrograd::aggregator {

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
      return absl::InvalidArgumentError(absl::StrCat(
          source, ":", line_number,
          ": expected \"JOB_ID TOKEN\" (or \"* TOKEN\"), got ", fields.size(),
          " fields"));
    }
    const std::string token(fields[1]);
    if (!store.job_by_token_.emplace(token, std::string(fields[0])).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ":", line_number, ": this token is already used above"));
    }
  }
  if (store.job_by_token_.empty()) {
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
  if (!absl::ConsumePrefix(&token, "Bearer ")) {
    return absl::UnauthenticatedError(
        "the authorization metadata is not \"Bearer <token>\"");
  }
  auto it = job_by_token_.find(std::string(token));
  if (it == job_by_token_.end()) {
    return absl::UnauthenticatedError("unknown bearer token");
  }
  if (it->second == "*") return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

}  // namespace entrograd::aggregator
