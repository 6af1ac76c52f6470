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
#include <stdexcept>
#include <system_error>

namespace rig::engine {
namespace {

sockaddr_in to_sockaddr(const Endpoint& ep) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(ep.port);
  const std::string host = ep.host == "localhost" ? "127.0.0.1" : ep.host;
  if (inet_pton(AF_INET, host.c_str(), &sa.sin_addr) != 1) {
    throw std::invalid_argument("not an IPv4 address: " + ep.host);
  }
  return sa;
}

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

}  // namespace

Endpoint parse_endpoint(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw std::invalid_argument("expected HOST:PORT, got '" + text + "'");
  }
  Endpoint ep;
  ep.host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  unsigned long v = 0;
  for (char c : port) {
    if (c < '0' || c > '9') throw std::invalid_argument("bad port in '" + text + "'");
    v = v * 10 + static_cast<unsigned long>(c - '0');
    if (v > 65535) throw std::invalid_argument("port out of range in '" + text + "'");
  }
  ep.port = static_cast<std::uint16_t>(v);
  to_sockaddr(ep);  // validates the host
  return ep;
}

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

bool is_loopback_host(const std::string& host) {
  if (host == "localhost") return true;
  in_addr a4{};
  if (::inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  in6_addr a6{};
  return ::inet_pton(AF_INET6, host.c_str(), &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

bool peer_is_loopback(int fd) {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) return false;
  if (sa.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(sa);
    return (ntohl(in.sin_addr.s_addr) >> 24) == 127;
  }
  if (sa.ss_family == AF_INET6) {
    const auto& in6 = reinterpret_cast<const sockaddr_in6&>(sa);
    if (IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) return in6.sin6_addr.s6_addr[12] == 127;
  }
  return false;
}

int tcp_listen(const Endpoint& ep, std::uint16_t& bound_port) {
  const sockaddr_in sa = to_sockaddr(ep);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw_errno("socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) < 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    throw_errno("bind " + ep.host + ":" + std::to_string(ep.port));
  }
  if (::listen(fd, 64) < 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    throw_errno("listen");
  }
  sockaddr_in got{};
  socklen_t len = sizeof got;
  getsockname(fd, reinterpret_cast<sockaddr*>(&got), &len);
  bound_port = ntohs(got.sin_port);
  return fd;
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

int tcp_connect(const Endpoint& ep) {
  const sockaddr_in sa = to_sockaddr(ep);
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw_errno("socket");
  set_job_options(fd);
  for (;;) {
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0) return fd;
    if (errno == EINTR) continue;
    const int e = errno;
    ::close(fd);
    errno = e;
    throw_errno("connect to " + ep.host + ":" + std::to_string(ep.port));
  }
}

}  // namespace rig::engine
