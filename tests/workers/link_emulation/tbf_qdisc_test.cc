#include "workers/link_emulation/tbf_qdisc.h"

#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"

namespace entrograd::link_emulation {
namespace {

TEST(TbfQdiscTest, BurstScalesWithRateAboveAFloor) {
  EXPECT_EQ(TbfBurstBytes(1'000'000), 16 * 1024);
  EXPECT_EQ(TbfBurstBytes(100'000'000), 50'000);
  EXPECT_EQ(TbfBurstBytes(1'000'000'000), 500'000);
  EXPECT_EQ(TbfBurstBytes(10'000'000'000), 5'000'000);
  const std::vector<std::string> args = TbfQdiscArgs("eth0", 100'000'000);
  EXPECT_EQ(absl::StrJoin(args, " "),
            "qdisc add dev eth0 root tbf rate 100000000bit burst 50000 "
            "latency 50ms");
}

}  // namespace
}  // namespace entrograd::link_emulation
