#include "workers/link_emulation/net_dev_counters.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace entrograd::link_emulation {
namespace {

using ::entrograd::testing::StatusIs;

// /proc/net/dev of a host namespace, as Linux 6.x prints it.
constexpr char kTable[] =
    "Inter-|   Receive                                                |  "
    "Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes "
    "   packets errs drop fifo colls carrier compressed\n"
    "    lo:     840      10    0    0    0     0          0         0      "
    "840      10    0    0    0     0       0          0\n"
    "  eth0: 26512345   17520    0    0    0     0          0         3 "
    "25001234    9001    0    0    0     0       0          0\n";

TEST(ParseNetDevBytesTest, ReadsReceiveAndTransmitBytes) {
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const InterfaceBytes eth0,
                                 ParseNetDevBytes(kTable, "eth0"));
  EXPECT_EQ(eth0.rx_bytes, 26512345);
  EXPECT_EQ(eth0.tx_bytes, 25001234);
  ENTROGRAD_ASSERT_OK_AND_ASSIGN(const InterfaceBytes lo,
                                 ParseNetDevBytes(kTable, "lo"));
  EXPECT_EQ(lo.rx_bytes, 840);
  EXPECT_EQ(lo.tx_bytes, 840);
}

TEST(ParseNetDevBytesTest, MissingInterfaceIsNotFound) {
  EXPECT_THAT(ParseNetDevBytes(kTable, "eth1"),
              StatusIs(absl::StatusCode::kNotFound, "eth1"));
  // A prefix of a name is not the name.
  EXPECT_THAT(ParseNetDevBytes(kTable, "eth"),
              StatusIs(absl::StatusCode::kNotFound, "eth"));
}

TEST(ParseNetDevBytesTest, ShortLineIsInvalid) {
  EXPECT_THAT(ParseNetDevBytes("  eth0: 1 2 3\n", "eth0"),
              StatusIs(absl::StatusCode::kInvalidArgument, "eth0"));
}

}  // namespace
}  // namespace entrograd::link_emulation
