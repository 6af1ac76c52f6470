#include "loopback_pair.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <system_error>

namespace rig::bench::refs {
namespace {

[[noreturn]] void fail(const char* what) { throw std::system_error(errno, std::generic_category(), what); }

void nodelay(int fd) {
  const int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) fail("setsockopt(TCP_NODELAY)");
}

}  // namespace

LoopbackPair loopback_pair() {
  Fd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (listener.get() < 0) fail("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("bind 127.0.0.1:0");
  if (::listen(listener.get(), 1) != 0) fail("listen");
  socklen_t len = sizeof addr;
  if (::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) fail("getsockname");

  LoopbackPair pair;
  pair.client = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (pair.client.get() < 0) fail("socket");
  if (::connect(pair.client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) fail("connect 127.0.0.1");
  pair.server = Fd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (pair.server.get() < 0) fail("accept");
  nodelay(pair.client.get());
  nodelay(pair.server.get());
  return pair;
}

}  // namespace rig::bench::refs
