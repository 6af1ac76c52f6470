// A connected pair of sockets on real loopback TCP, for engine tests.
#pragma once

#include <unistd.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "rig/engine/socket.h"
#include "rig/engine/tcp.h"

namespace rig::engine {

struct Pair {
  std::unique_ptr<Socket> a, b;
};

// A loopback pair; `a` is made with `send` (its zero-copy threshold and counters).
inline Pair connected(Backend backend, SendOptions send = {}) {
  std::uint16_t port = 0;
  // Loopback does not refuse a test: a failure stops it with the reason (Result's value()).
  const int lfd = *tcp_listen(Endpoint{"127.0.0.1", 0}, port);
  int afd = -1;
  std::thread t([&] { afd = tcp_accept(lfd); });
  const int cfd = *tcp_connect(Endpoint{"127.0.0.1", port});
  t.join();
  ::close(lfd);
  return {make_socket(cfd, backend, send), make_socket(afd, backend)};
}

// A test run on each socket backend: fails where io_uring cannot be set up (these machines have
// it); instantiate with kBackends and backend_test_name.
class BackendTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::kUring && !uring_available()) GTEST_FAIL() << "no io_uring here";
  }
};

inline const auto kBackends = ::testing::Values(Backend::kUring, Backend::kPlain);
inline std::string backend_test_name(const ::testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kUring ? "Uring" : "Plain";
}

}  // namespace rig::engine
