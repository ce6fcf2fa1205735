#include "workers/link_emulation/traffic_json.h"

#include "gtest/gtest.h"

namespace entrograd::link_emulation {
namespace {

TEST(FormatTrafficJsonTest, OneObjectWithAHostArray) {
  const LinkRate link{1'000'000'000, "1gbit"};
  const std::vector<HostTraffic> hosts = {
      {0, "eg7-0-h0", "10.213.0.1", 100, 2000},
      {1, "eg7-0-h1", "10.213.0.2", 2000, 100}};
  EXPECT_EQ(FormatTrafficJson(link, hosts),
            "{\"link\":\"1gbit\",\"rate_bits_per_second\":1000000000,"
            "\"hosts\":["
            "{\"host\":0,\"namespace\":\"eg7-0-h0\",\"address\":\"10.213.0.1\","
            "\"rx_bytes\":100,\"tx_bytes\":2000},"
            "{\"host\":1,\"namespace\":\"eg7-0-h1\",\"address\":\"10.213.0.2\","
            "\"rx_bytes\":2000,\"tx_bytes\":100}]}\n");
}

TEST(FormatTrafficJsonTest, OddBytesInANameStillMakeValidJson) {
  const std::string json = FormatTrafficJson(
      LinkRate{0, "unlimited"}, {{0, "ns\"\xff", "10.213.0.1", 1, 2}});
  EXPECT_NE(json.find("\"namespace\":\"ns\\\"\xef\xbf\xbd\""),
            std::string::npos)
      << json;
}

TEST(FormatTrafficJsonTest, UnlimitedHasRateZero) {
  EXPECT_EQ(FormatTrafficJson(LinkRate{0, "unlimited"}, {}),
            "{\"link\":\"unlimited\",\"rate_bits_per_second\":0,"
            "\"hosts\":[]}\n");
}

}  // namespace
}  // namespace entrograd::link_emulation
