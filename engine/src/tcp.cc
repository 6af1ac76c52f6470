#include "rig/engine/tcp.h"

#include "rig/engine/iov_cursor.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace rig::engine {
namespace {

// errno's failure, in the words std::system_error used to give it: "what: errno's text".
wire::Outcome failed_errno(int e, const std::string& what) {
  return wire::Outcome::failed(-e, what + ": " + std::strerror(e));
}

// Closes fd keeping errno, and gives errno's failure naming `what`.
wire::Outcome close_failed(int fd, const std::string& what) {
  const int e = errno;
  ::close(fd);
  return failed_errno(e, what);
}

}  // namespace

void set_job_options(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  int idle = kKeepIdleS, intvl = kKeepIntervalS, cnt = kKeepCount, user = kUserTimeoutMs;
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, sizeof user);
}

int next_receive_wait_ms(int fd, int bound_ms, long got, std::size_t wanted) {
  if (bound_ms <= 0) return 0;
  if (got <= 0 || static_cast<std::size_t>(got) >= wanted) return bound_ms;
  tcp_info info{};
  socklen_t len = sizeof info;
  // Not TCP (a test's socket pair): the whole bound again, as each receive had before.
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return bound_ms;
  const std::int64_t silent_ms = info.tcpi_last_data_recv;
  return silent_ms >= bound_ms ? -1 : static_cast<int>(std::max<std::int64_t>(bound_ms - silent_ms, 1));
}

bool tcp_gave_up(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  return ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 && info.tcpi_state == TCP_CLOSE;
}

void set_send_silence_ms(int fd, int ms) {
  const int user = ms > 0 ? ms : kUserTimeoutMs;
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, sizeof user);
}

int recv_within(int fd, void* buf, std::size_t n, int timeout_ms) {
  auto* p = static_cast<char*>(buf);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (n > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::max<long>(0, left.count())));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return -errno;
    if (ready == 0) return -ETIME;
    const ssize_t got = ::recv(fd, p, n, MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got < 0) return -errno;
    if (got == 0) return -ECONNRESET;
    p += got;
    n -= static_cast<std::size_t>(got);
  }
  return 0;
}

int send_within(int fd, std::span<const iovec> iov, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  IovCursor cursor(iov);
  while (!cursor.done()) {
    iovec window[IovCursor::kWindow];
    msghdr msg{};
    msg.msg_iov = window;
    msg.msg_iovlen = cursor.window(window);
    const ssize_t sent = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      cursor.advance(static_cast<std::size_t>(sent));
      continue;
    }
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && errno != EAGAIN) return -errno;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd pfd{fd, POLLOUT, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::max<long>(0, left.count())));
    if (ready < 0 && errno != EINTR) return -errno;
    if (ready == 0) return -ETIME;
  }
  return 0;
}

bool peer_is_loopback(int fd) {
  Address peer;
  return peer_address(fd, peer) && is_loopback(peer);
}

wire::Result<int> tcp_listen(const Address& a, std::uint16_t& bound_port) {
  const int fd = ::socket(a.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return failed_errno(errno, "socket for " + to_string(a));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, a.get(), a.length) < 0) return close_failed(fd, "bind " + to_string(a));
  if (::listen(fd, 64) < 0) return close_failed(fd, "listen on " + to_string(a));
  Address got;
  local_address(fd, got);
  bound_port = got.family() == AF_INET6 ? ntohs(reinterpret_cast<const sockaddr_in6&>(got.storage).sin6_port)
                                        : ntohs(reinterpret_cast<const sockaddr_in&>(got.storage).sin_port);
  return fd;
}

wire::Result<int> tcp_listen_first(const std::vector<Address>& addresses, std::uint16_t& bound_port, Address* bound) {
  if (addresses.empty()) return wire::Outcome::failed(-EINVAL, "no address to listen on");
  for (std::size_t i = 0;; ++i) {
    wire::Result<int> fd = tcp_listen(addresses[i], bound_port);
    if (fd.ok() && bound != nullptr) local_address(*fd, *bound);
    if (fd.ok() || i + 1 == addresses.size()) return fd;  // else the last one's cause
  }
}

wire::Result<int> tcp_listen(const Endpoint& ep, std::uint16_t& bound_port, Address* bound) {
  wire::Result<std::vector<Address>> addresses = resolve(ep, Use::kListen);
  RIG_RETURN_IF_FAILED(addresses.outcome());
  return tcp_listen_first(*addresses, bound_port, bound);
}

int tcp_accept(int listen_fd) {
  for (;;) {
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    set_job_options(fd);
    return fd;
  }
}

wire::Result<int> tcp_connect(const Address& a) {
  const int fd = ::socket(a.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return failed_errno(errno, "socket for " + to_string(a));
  set_job_options(fd);
  for (;;) {
    if (::connect(fd, a.get(), a.length) == 0) return fd;
    if (errno != EINTR) return close_failed(fd, "connect to " + to_string(a));
  }
}

wire::Result<int> tcp_connect_first(const std::vector<Address>& addresses, const std::string& name, Address& reached) {
  std::string tried;
  int last = -EDESTADDRREQ;
  for (const Address& a : addresses) {
    wire::Result<int> fd = tcp_connect(a);
    if (fd.ok()) {
      reached = a;
      return fd;
    }
    last = fd.outcome().err();
    tried += (tried.empty() ? "" : "; ") + to_string(a) + ": " + std::strerror(-last);
  }
  if (addresses.size() == 1 && to_string(addresses[0]) == name) return failed_errno(-last, "connect to " + name);
  return failed_errno(-last, "connect to " + name + " (tried " + tried + ")");
}

wire::Result<int> tcp_connect(const Endpoint& ep, Address* reached) {
  wire::Result<std::vector<Address>> addresses = resolve(ep, Use::kConnect);
  RIG_RETURN_IF_FAILED(addresses.outcome());
  Address a;
  wire::Result<int> fd = tcp_connect_first(*addresses, to_string(ep), a);
  if (fd.ok() && reached != nullptr) *reached = a;
  return fd;
}

}  // namespace rig::engine
