// Which configured hosts count as loopback (orchestrator/ports.h, is_loopback_host): the
// orchestrator warns about every other one, so a loopback host written another way must not
// warn, and nothing reachable from the network may pass.
#include "orchestrator/ports.h"

#include <gtest/gtest.h>

namespace gym::orchestrator {
namespace {

TEST(LoopbackHost, EveryWayOfWritingLoopbackCounts) {
  for (const char* host :
       {"localhost", "LOCALHOST", "LocalHost", "localhost.", "127.0.0.1", "127.1.2.3", "127.1",
        "127.255.255.254", "::1", "[::1]", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1",
        "[::ffff:127.0.0.1]", "::FFFF:127.9.9.9"})
    EXPECT_TRUE(is_loopback_host(host)) << host;
}

TEST(LoopbackHost, OtherAddressesAndNamesDoNot) {
  for (const char* host :
       {"0.0.0.0", "::", "[::]", "10.0.0.1", "128.0.0.1", "1.127.0.0", "::ffff:10.0.0.1",
        "::ffff:0.0.0.0", "::2", "localhost.example.com", "mylocalhost", "127.example.com",
        "127.0.0.1 10.0.0.1", "", "[", "[]", "node01"})
    EXPECT_FALSE(is_loopback_host(host)) << host;
}

}  // namespace
}  // namespace gym::orchestrator
