// Endpoints by name (README "Using it"): a job reaches a real rig-agent by a hostname and by a
// bracketed IPv6 address; a name that does not resolve fails the connect with the resolver's
// text; a link's stripes go to the address its job's connection reached.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "agent_process.h"
#include "rig/engine/address.h"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"

namespace rig::test {
namespace {

using remote::Job;

std::string port_of(const std::string& endpoint) { return endpoint.substr(endpoint.rfind(':') + 1); }

// Whether this machine can listen on the IPv6 loopback.
bool have_ipv6_loopback() {
  const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

TEST(Endpoints, AJobReachesAnAgentByLocalhostAndDrivesIt) {
  AgentProcess agent;
  auto job = Job::create();
  remote::Link& link = job->connect("localhost:" + port_of(agent.endpoint()));
  EXPECT_EQ(link.address(), "127.0.0.1:" + port_of(agent.endpoint()));
  harness::Driven dev(link, 1);
  EXPECT_TRUE(dev->alloc(edge::Memory::kDevice, 4096).has_value());
  job->close();
}

TEST(Endpoints, AJobReachesAnAgentListeningOnTheIPv6Loopback) {
  if (!have_ipv6_loopback()) GTEST_SKIP() << "this machine has no IPv6 loopback (::1)";
  AgentProcess agent({"--listen", "[::1]:0"});
  ASSERT_EQ(agent.endpoint().rfind("[::1]:", 0), 0u) << agent.endpoint();
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  EXPECT_EQ(link.address(), agent.endpoint());
  harness::Driven dev(link, 1);
  EXPECT_TRUE(dev->alloc(edge::Memory::kDevice, 4096).has_value());
  job->close();
}

TEST(Endpoints, ANameThatDoesNotResolveFailsTheConnectWithTheResolversText) {
  auto job = Job::create();
  try {
    job->connect("no-such-host.invalid:7300");
    FAIL() << "connected";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cannot resolve 'no-such-host.invalid'"), std::string::npos) << what;
    EXPECT_NE(what.find("Name or service not known"), std::string::npos) << what;
  }
}

TEST(Endpoints, AStripedLinkByNameConnectsItsStripesToTheAddressItsJobReached) {
  AgentProcess agent({"--max-stripes", "4"});
  remote::LinkOptions o;
  o.stripes = 2;
  o.stripe_min_bytes = 64 * 1024;
  auto job = Job::create();
  remote::Link& link = job->connect("localhost:" + port_of(agent.endpoint()), o);
  EXPECT_EQ(link.address(), "127.0.0.1:" + port_of(agent.endpoint()));
  ASSERT_EQ(link.stripe_addresses().size(), 2u);
  for (const std::string& a : link.stripe_addresses()) EXPECT_EQ(a, link.address());
  job->close();
}

}  // namespace
}  // namespace rig::test
