// TokenStore: which job a bearer token grants, the scheme in any case, and
// refusal of anything that is not exactly a configured token.
#include "aggregator/auth/token_store.h"

#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::testing {
namespace {

using aggregator::TokenStore;

TokenStore Store() {
  absl::StatusOr<TokenStore> store =
      TokenStore::Parse("# tokens\njob-a tok-a\njob-b tok-b\n* shared\n", "t");
  EXPECT_TRUE(store.ok()) << store.status();
  return *std::move(store);
}

TEST(TokenStoreTest, GrantsTheTokensJob) {
  const TokenStore store = Store();
  EXPECT_EQ(store.Authorize("Bearer tok-a").value(),
            std::optional<std::string>("job-a"));
  EXPECT_EQ(store.Authorize("Bearer tok-b").value(),
            std::optional<std::string>("job-b"));
  EXPECT_EQ(store.Authorize("Bearer shared").value(), std::nullopt);
}

TEST(TokenStoreTest, SchemeIsCaseInsensitive) {
  const TokenStore store = Store();
  for (const char* header : {"bearer tok-a", "BEARER tok-a", "bEaReR tok-a"}) {
    absl::StatusOr<std::optional<std::string>> job = store.Authorize(header);
    ASSERT_TRUE(job.ok()) << header << ": " << job.status();
    EXPECT_EQ(*job, std::optional<std::string>("job-a")) << header;
  }
}

TEST(TokenStoreTest, RefusesAnythingButAConfiguredToken) {
  const TokenStore store = Store();
  EXPECT_THAT(store.Authorize(std::nullopt),
              StatusIs(absl::StatusCode::kUnauthenticated, "missing"));
  for (const char* header :
       {"Basic tok-a", "Bearertok-a", "Bearer", "Bearer ", "tok-a"}) {
    EXPECT_THAT(store.Authorize(header),
                StatusIs(absl::StatusCode::kUnauthenticated, "not \"Bearer"))
        << header;
  }
  // Prefixes, extensions and case changes of a token are other tokens.
  for (const char* header : {"Bearer tok", "Bearer tok-a ", "Bearer tok-ax",
                             "Bearer TOK-A", "Bearer  tok-a"}) {
    EXPECT_THAT(store.Authorize(header),
                StatusIs(absl::StatusCode::kUnauthenticated, "unknown"))
        << header;
  }
}

TEST(TokenStoreTest, ParseRefusesARepeatedToken) {
  EXPECT_THAT(TokenStore::Parse("job-a t\njob-b t\n", "f"),
              StatusIs(absl::StatusCode::kInvalidArgument, "f:2"));
}

}  // namespace
}  // namespace entrograd::testing
