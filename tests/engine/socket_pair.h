// A connected pair of sockets on real loopback TCP, for engine tests.
#pragma once

#include <unistd.h>

#include <memory>
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
  const int lfd = tcp_listen(Endpoint{"127.0.0.1", 0}, port);
  int afd = -1;
  std::thread t([&] { afd = tcp_accept(lfd); });
  const int cfd = tcp_connect(Endpoint{"127.0.0.1", port});
  t.join();
  ::close(lfd);
  return {make_socket(cfd, backend, send), make_socket(afd, backend)};
}

}  // namespace rig::engine
