#include "rig/engine/plain_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "rig/engine/iov_cursor.h"

namespace rig::engine {

PlainSocket::~PlainSocket() { ::close(fd_); }

int PlainSocket::send_all(std::span<const iovec> iov) {
  return transfer_all(iov, -EPIPE, [&](msghdr& msg) -> long {
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    return n < 0 ? -errno : n;
  });
}

long PlainSocket::recv_some(void* buf, std::size_t n) {
  for (;;) {
    const ssize_t got = ::recv(fd_, buf, n, 0);
    if (got < 0 && errno == EINTR) continue;
    return got < 0 ? -errno : got;
  }
}

long PlainSocket::recv_ready(void* buf, std::size_t n) {
  for (;;) {
    const ssize_t got = ::recv(fd_, buf, n, MSG_DONTWAIT);
    if (got < 0 && errno == EINTR) continue;
    return got < 0 ? (errno == EWOULDBLOCK ? -EAGAIN : -errno) : got;
  }
}

int PlainSocket::recv_all(std::span<const iovec> iov) {
  return transfer_all(iov, -ECONNRESET, [&](msghdr& msg) -> long {
    const ssize_t n = ::recvmsg(fd_, &msg, MSG_WAITALL);
    return n < 0 ? -errno : n;
  });
}

int poll_readable(int fd, int timeout_ms) {
  for (;;) {
    pollfd pfd{fd, POLLIN, 0};
    const int rc = ::poll(&pfd, 1, timeout_ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return -errno;
    return rc == 0 ? -ETIME : 0;
  }
}

int PlainSocket::wait_readable(int timeout_ms) { return poll_readable(fd_, timeout_ms); }

void PlainSocket::shutdown() { ::shutdown(fd_, SHUT_RDWR); }

}  // namespace rig::engine
