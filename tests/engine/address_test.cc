// Endpoints by name: what parse_endpoint accepts, what resolve() says of a name it cannot
// resolve, and the order in which a client tries a name's addresses (real sockets on loopback).
#include <gtest/gtest.h>

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "rig/engine/address.h"
#include "rig/engine/tcp.h"

namespace rig::engine {
namespace {

// A loopback port that refuses connections: bound, never listened on, so nothing else takes it
// while the test runs.
struct RefusingPort {
  RefusingPort() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    Address a = resolve(Endpoint{"127.0.0.1", 0}, Use::kListen)->front();
    EXPECT_EQ(::bind(fd, a.get(), a.length), 0);
    local_address(fd, address);
  }
  ~RefusingPort() { ::close(fd); }
  int fd = -1;
  Address address;
};

TEST(Endpoint, ParsesANameAnIPv4AddressAndABracketedIPv6Address) {
  EXPECT_EQ(parse_endpoint("localhost:7300")->host, "localhost");
  EXPECT_EQ(parse_endpoint("10.0.0.5:7300")->host, "10.0.0.5");
  const Endpoint v6 = *parse_endpoint("[::1]:7300");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 7300);
  EXPECT_EQ(to_string(v6), "[::1]:7300");
}

TEST(Endpoint, AnIPv6AddressWithoutBracketsIsRefusedNamingTheFix) {
  const wire::Outcome o = parse_endpoint("::1:7300").outcome();
  EXPECT_EQ(o.err(), -EINVAL) << "accepted";
  EXPECT_NE(o.why().find("needs brackets"), std::string::npos) << o.why();
  EXPECT_EQ(parse_endpoint("[::1:7300").outcome().err(), -EINVAL);
  EXPECT_EQ(parse_endpoint("localhost").outcome().err(), -EINVAL);
  EXPECT_EQ(parse_endpoint("localhost:70000").outcome().err(), -EINVAL);
}

TEST(Endpoint, ANameThatDoesNotResolveIsAnErrorNamingItWithTheResolversText) {
  const wire::Outcome o = resolve(*parse_endpoint("no-such-host.invalid:7300"), Use::kConnect).outcome();
  ASSERT_FALSE(o.ok()) << "resolved";
  EXPECT_EQ(o.err(), -ENXIO);  // EAI_NONAME: a name without an address
  const std::string& what = o.why();
  EXPECT_NE(what.find("cannot resolve 'no-such-host.invalid' (no-such-host.invalid:7300)"), std::string::npos)
      << what;
  EXPECT_NE(what.find(::gai_strerror(EAI_NONAME)), std::string::npos) << what;
}

TEST(Endpoint, LocalhostResolvesToLoopbackAddresses) {
  const std::vector<Address> all = *resolve(*parse_endpoint("localhost:7300"), Use::kConnect);
  ASSERT_FALSE(all.empty());
  for (const Address& a : all) EXPECT_TRUE(is_loopback(a)) << to_string(a);
}

TEST(Connect, AClientTriesANamesAddressesInOrderAndReachesTheFirstThatAccepts) {
  RefusingPort refusing;
  std::uint16_t port = 0;
  Address listening;
  const int lfd = *tcp_listen(Endpoint{"127.0.0.1", 0}, port, &listening);
  Address reached;
  const wire::Result<int> connected = tcp_connect_first({refusing.address, listening}, "two-addresses:1", reached);
  ASSERT_TRUE(connected.ok()) << connected.outcome().why();
  const int fd = *connected;
  EXPECT_EQ(to_string(reached), to_string(listening));
  Address peer;
  ASSERT_TRUE(peer_address(fd, peer));
  EXPECT_EQ(to_string(peer), to_string(listening));
  ::close(fd);
  ::close(lfd);
}

TEST(Connect, WhenEveryAddressRefusesTheErrorNamesEachAddressAndItsCause) {
  RefusingPort a, b;
  Address reached;
  const wire::Outcome o = tcp_connect_first({a.address, b.address}, "two-addresses:1", reached).outcome();
  ASSERT_FALSE(o.ok()) << "connected";
  EXPECT_EQ(o.err(), -ECONNREFUSED);
  EXPECT_EQ(o.why(), "connect to two-addresses:1 (tried " + to_string(a.address) + ": Connection refused; " +
                         to_string(b.address) + ": Connection refused): Connection refused");
}

}  // namespace
}  // namespace rig::engine
