#include "rig/engine/plain_socket.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "rig/engine/iov_cursor.h"
#include "rig/engine/syscall_count.h"
#include "rig/engine/tcp.h"

namespace rig::engine {

PlainSocket::~PlainSocket() { ::close(fd_); }

int PlainSocket::send_all(std::span<const iovec> iov) {
  return transfer_all(iov, -EPIPE, [&](msghdr& msg) -> long {
    count_syscall();
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    return n < 0 ? -errno : n;
  });
}

namespace {
// A blocking receive with SO_RCVTIMEO set says EAGAIN once the bound passed with no byte.
long timed_out_is(long rc) { return rc == -EAGAIN || rc == -EWOULDBLOCK ? -ETIMEDOUT : rc; }

void set_recv_timeout(int fd, int ms) {
  const timeval tv{ms / 1000, (ms % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}
}  // namespace

void PlainSocket::set_recv_silence_ms(int ms) {
  recv_silence_ms_ = ms;
  set_recv_timeout(fd_, ms);
}

long send_now(int fd, std::span<const iovec> iov) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov.data());
  msg.msg_iovlen = iov.size();
  for (;;) {
    count_syscall();
    const ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    return n < 0 ? (errno == EWOULDBLOCK ? -EAGAIN : -errno) : n;
  }
}

long PlainSocket::send_ready(std::span<const iovec> iov) { return send_now(fd_, iov); }

long PlainSocket::recv_some(void* buf, std::size_t n) {
  for (;;) {
    count_syscall();
    const ssize_t got = ::recv(fd_, buf, n, 0);
    if (got < 0 && errno == EINTR) continue;
    return got < 0 ? timed_out_is(-errno) : got;
  }
}

long PlainSocket::recv_ready(void* buf, std::size_t n) {
  for (;;) {
    count_syscall();
    const ssize_t got = ::recv(fd_, buf, n, MSG_DONTWAIT);
    if (got < 0 && errno == EINTR) continue;
    return got < 0 ? (errno == EWOULDBLOCK ? -EAGAIN : -errno) : got;
  }
}

int PlainSocket::recv_all(std::span<const iovec> iov) {
  // A call returns what came once the bound passed (MSG_WAITALL ends early): the next one waits
  // only for what is left of the bound since the last byte (next_receive_wait_ms).
  int wait_ms = recv_silence_ms_;
  return transfer_all(iov, -ECONNRESET, [&](msghdr& msg) -> long {
    if (wait_ms < 0) return -ETIMEDOUT;
    if (wait_ms != recv_silence_ms_) set_recv_timeout(fd_, wait_ms);
    count_syscall();
    const ssize_t n = ::recvmsg(fd_, &msg, MSG_WAITALL);
    const long got = n < 0 ? timed_out_is(-errno) : n;
    if (wait_ms != recv_silence_ms_) set_recv_timeout(fd_, recv_silence_ms_);
    wait_ms = next_receive_wait_ms(fd_, recv_silence_ms_, got, iov_bytes({msg.msg_iov, msg.msg_iovlen}));
    return got;
  });
}

int poll_readable(int fd, int timeout_ms) {
  return poll_readable_ns(fd, timeout_ms < 0 ? -1 : std::int64_t{timeout_ms} * 1'000'000);
}

int poll_readable_ns(int fd, std::int64_t timeout_ns) {
  const timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
  for (;;) {
    pollfd pfd{fd, POLLIN, 0};
    count_syscall();
    const int rc = ::ppoll(&pfd, 1, timeout_ns < 0 ? nullptr : &ts, nullptr);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return -errno;
    return rc == 0 ? -ETIME : 0;
  }
}

int poll_readable_or_event(int fd, int event_fd, int timeout_ms) {
  for (;;) {
    pollfd pfd[2] = {{fd, POLLIN, 0}, {event_fd, POLLIN, 0}};
    count_syscall();
    const int rc = ::poll(pfd, 2, timeout_ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return -errno;
    if (rc == 0) return -ETIME;
    if ((pfd[1].revents & POLLNVAL) != 0) return -EBADF;
    // Bytes first, the event left for the next wait: the read may bring part of a frame only,
    // and the reader then waits again, where the event must still end the wait.
    if (pfd[0].revents != 0) return 0;
    std::uint64_t count = 0;
    count_syscall();
    if (::read(event_fd, &count, sizeof count) < 0 && errno != EAGAIN) return -errno;
    return 1;
  }
}

int set_recv_low_water(int fd, int bytes) {
  count_syscall();
  return ::setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof bytes) == 0 ? 0 : -errno;
}

int PlainSocket::wait_readable(int timeout_ms) { return poll_readable(fd_, timeout_ms); }

void PlainSocket::shutdown() { ::shutdown(fd_, SHUT_RDWR); }

}  // namespace rig::engine
