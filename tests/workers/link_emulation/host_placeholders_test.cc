#include "workers/link_emulation/host_placeholders.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace entrograd::link_emulation {
namespace {

using ::testing::ElementsAre;

TEST(ExpandHostPlaceholdersTest, FillsEveryPlaceholderAnywhere) {
  HostPlaceholders values;
  values.host = 3;
  values.hosts = 8;
  values.addr = "10.213.0.4";
  values.addr0 = "10.213.0.1";
  EXPECT_THAT(
      ExpandHostPlaceholders(
          {"worker", "--rank={host}", "--world={hosts}", "--bind={addr}:0",
           "{addr0}:5000", "{host}{host}", "{other}", "{host"},
          values),
      ElementsAre("worker", "--rank=3", "--world=8", "--bind=10.213.0.4:0",
                  "10.213.0.1:5000", "33", "{other}", "{host"));
}

}  // namespace
}  // namespace entrograd::link_emulation
