#include "workers/link_emulation/topology_names.h"

#include <unistd.h>

#include <optional>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace entrograd::link_emulation {
namespace {

TEST(TopologyNamesTest, NamesRoundTrip) {
  const std::string prefix = AcquireTopologyPrefix();
  EXPECT_EQ(prefix.rfind(absl::StrCat("eg", ::getpid(), "-"), 0), 0u);
  for (const std::string& name :
       {HubNamespace(prefix), HostNamespace(prefix, 0),
        HostNamespace(prefix, 12), ProbeNamespace(prefix)}) {
    SCOPED_TRACE(name);
    const std::optional<TopologyNamespace> parsed =
        ParseTopologyNamespace(name);
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(parsed->pid, ::getpid());
    EXPECT_EQ(parsed->prefix, prefix);
  }
  ReleaseTopologyPrefix(prefix);
}

TEST(TopologyNamesTest, OtherNamesAreNotOurs) {
  for (const char* name :
       {"", "eg", "eg12", "eg12-0", "eg12-0-h", "eg12-0-x1", "eg12-0-hub-2",
        "egx-0-hub", "eg-1-0-hub", "eg12-a-h0", "eg0-0-hub",
        "eg99999999999-0-hub", "my-netns", "xeg12-0-hub"}) {
    SCOPED_TRACE(name);
    EXPECT_FALSE(ParseTopologyNamespace(name).has_value());
  }
}

TEST(TopologyNamesTest, OwnPidIsStaleOnlyWhenNotHeld) {
  const std::string prefix = AcquireTopologyPrefix();
  const std::optional<TopologyNamespace> held =
      ParseTopologyNamespace(HubNamespace(prefix));
  ASSERT_TRUE(held.has_value());
  EXPECT_FALSE(IsStaleTopologyNamespace(*held));
  ReleaseTopologyPrefix(prefix);
  EXPECT_TRUE(IsStaleTopologyNamespace(*held));
  // A namespace of a live process other than ours is not stale.
  const TopologyNamespace parent{::getppid(),
                                 absl::StrCat("eg", ::getppid(), "-0")};
  EXPECT_FALSE(IsStaleTopologyNamespace(parent));
}

}  // namespace
}  // namespace entrograd::link_emulation
