#include "rig/engine/uring_socket.h"

#include <liburing.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "rig/engine/counters.h"
#include "rig/engine/env_settings.h"
#include "rig/engine/iov_cursor.h"
#include "rig/engine/plain_socket.h"
#include "rig/engine/syscall_count.h"
#include "rig/engine/tcp.h"
#include "uring_ring.h"

namespace rig::engine {
namespace {

// One ring per receiving thread: only its thread submits to it and reaps it.
Ring& thread_ring() {
  thread_local Ring ring(Ring::Use::kPerThread);
  return ring;
}

}  // namespace

bool uring_available() {
  static const bool ok = [] {
    io_uring ring{};
    if (io_uring_queue_init(2, &ring, 0) < 0) return false;
    io_uring_queue_exit(&ring);
    return true;
  }();
  return ok;
}

Backend default_backend() {
  if (const auto backend = env_settings()->backend) return *backend;
  return uring_available() ? Backend::kUring : Backend::kPlain;
}

const char* backend_name(Backend b) { return b == Backend::kUring ? "io_uring" : "plain"; }

std::unique_ptr<Socket> make_socket(int fd, Backend backend, SendOptions send) {
  if (backend == Backend::kUring && uring_available()) return std::make_unique<UringSocket>(fd, send);
  return std::make_unique<PlainSocket>(fd);
}

UringSocket::UringSocket(int fd, SendOptions send)
    : fd_(fd),
      zc_bytes_(resolve_send_zc_bytes(fd, send.zc_bytes)),
      zc_flags_(IORING_SEND_ZC_REPORT_USAGE),
      counters_(send.counters),
      send_ring_(std::make_unique<Ring>(Ring::Use::kShared)) {}

UringSocket::~UringSocket() {
  // A posted send still borrows its memory from the kernel's side: end it first (its owner
  // should have; the poster's thread is the one destroying the socket).
  if (posted_ring_ != nullptr) finish_send();
  send_ring_.reset();  // nothing is in flight: every send reaped its CQEs before returning
  ::close(fd_);
}

// One zero-copy operation, with its result and notification reaped. Returns bytes, -errno, or
// kRefused when the kernel will not send zero-copy (the caller sends the rest by copy).
template <class Prep>
long UringSocket::zc_op(Prep prep) {
  for (;;) {
    bool copied = false;
    const int n = send_ring_->run_zc(
        [&](io_uring_sqe* sqe) {
          prep(sqe);
          sqe->ioprio |= zc_flags_;
        },
        copied);
    if (n == -EINVAL && zc_flags_ != 0) {
      zc_flags_ = 0;  // a kernel before 6.2 knows no usage report: try once without it
      continue;
    }
    if (n == -EOPNOTSUPP || n == -EINVAL || n == -ENOMEM) {
      if (n != -ENOMEM) zc_bytes_ = 0;  // not for this socket, ever; -ENOMEM: memlock, this call
      if (counters_ != nullptr) bump(counters_->zc_fallbacks, 1);
      return kRefused;
    }
    if (n > 0 && counters_ != nullptr) {
      bump(counters_->zc_sends, 1);
      if (copied) bump(counters_->zc_copied, 1);
    }
    return n;
  }
}

int UringSocket::send_iov(std::span<const iovec> iov, int flags) {
  flags |= MSG_NOSIGNAL | MSG_WAITALL;
  const std::size_t bytes = iov_bytes(iov);
  bool zc = zc_bytes_ > 0 && bytes >= zc_bytes_;
  // A small send by copy on a ring that no SQ thread polls is one system call either way, and
  // sendmsg(2) is the cheaper one: no SQE, no CQE, no ring to look up (about 0.9x the CPU per
  // pipelined tiny handover on 2 cores, bench/RESULTS.md "Sends by copy go by sendmsg"). The
  // ring keeps what it does better: SQ-polled submission (no call at all), zero-copy sends
  // with their notifications, a posted send riding with a receive (post_send), and large sends
  // (kRingSendMinBytes).
  if (send_ring_->error() != 0 || (!zc && !send_ring_->sq_polled() && bytes < kRingSendMinBytes)) {
    return transfer_all(iov, -EPIPE, [&](msghdr& msg) -> long {
      count_syscall();
      const ssize_t n = ::sendmsg(fd_, &msg, flags & ~MSG_WAITALL);
      return n < 0 ? -errno : n;
    });
  }
  return transfer_all(iov, -EPIPE, [&](msghdr& msg) -> long {
    if (zc && zc_bytes_ > 0) {
      const long n = zc_op([&](io_uring_sqe* sqe) { io_uring_prep_sendmsg_zc(sqe, fd_, &msg, flags); });
      if (n != kRefused) return n;
      zc = false;  // the rest of this call goes by copy
    }
    return send_ring_->run([&](io_uring_sqe* sqe) { io_uring_prep_sendmsg(sqe, fd_, &msg, flags); });
  });
}

int UringSocket::send_all(std::span<const iovec> iov) { return send_iov(iov, 0); }

int UringSocket::post_send(std::span<const iovec> iov) {
  if (posted_ring_ != nullptr) return -EBUSY;
  Ring& ring = thread_ring();
  const std::size_t bytes = iov_bytes(iov);
  if (ring.error() != 0 || ring.has_posted() || (zc_bytes_ > 0 && bytes >= zc_bytes_) ||
      iov.size() > IovCursor::kWindow) {
    return Socket::post_send(iov);  // at once, as send_all (zero-copy, or no ring to ride on)
  }
  posted_iov_.assign(iov.begin(), iov.end());
  posted_msg_ = msghdr{};
  posted_msg_.msg_iov = posted_iov_.data();
  posted_msg_.msg_iovlen = posted_iov_.size();
  posted_bytes_ = bytes;
  const int rc = ring.post([&](io_uring_sqe* sqe) {
    io_uring_prep_sendmsg(sqe, fd_, &posted_msg_, MSG_NOSIGNAL | MSG_WAITALL);
  });
  if (rc != 0) return rc;
  posted_ring_ = &ring;
  return 0;
}

int UringSocket::finish_send() {
  if (posted_ring_ == nullptr) return Socket::finish_send();
  const long n = std::exchange(posted_ring_, nullptr)->finish_posted();
  if (n < 0) return static_cast<int>(n);
  if (n == 0 && posted_bytes_ > 0) return -EPIPE;
  // A short send (a signal, a full socket buffer with MSG_WAITALL ended): the rest, now.
  IovCursor rest(posted_iov_);
  rest.advance(static_cast<std::size_t>(n));
  iovec window[IovCursor::kWindow];
  return rest.done() ? 0 : send_all({window, rest.window(window)});
}

int UringSocket::push_posted() { return posted_ring_ == nullptr ? 0 : posted_ring_->push_posted(); }

int UringSocket::register_send_buffers(std::span<const iovec> bufs) {
  if (registered_) return -EBUSY;
  if (send_ring_->error() != 0) return -EOPNOTSUPP;
  const int rc = send_ring_->register_buffers(bufs);
  registered_ = rc == 0;
  return rc;
}

int UringSocket::send_fixed(std::span<const iovec> head, const void* p, std::size_t n, unsigned index) {
  if (!registered_ || zc_bytes_ == 0 || iov_bytes(head) + n < zc_bytes_) {
    return Socket::send_fixed(head, p, n, index);  // one sendmsg, by copy
  }
  // The header is small: by copy, corked (MSG_MORE) so that it leaves with the payload.
  if (const int rc = send_iov(head, MSG_MORE); rc != 0) return rc;
  const auto* at = static_cast<const char*>(p);
  std::size_t left = n;
  while (left > 0) {
    const long got = zc_op([&](io_uring_sqe* sqe) {
      io_uring_prep_send_zc_fixed(sqe, fd_, at, left, MSG_NOSIGNAL | MSG_WAITALL, 0, index);
    });
    if (got == kRefused) {
      const iovec rest{const_cast<char*>(at), left};
      return send_iov({&rest, 1}, 0);
    }
    if (got == -EINTR || got == -EAGAIN) continue;
    if (got < 0) return static_cast<int>(got);
    if (got == 0) return -EPIPE;
    at += got;
    left -= static_cast<std::size_t>(got);
  }
  return 0;
}

long UringSocket::recv_ready(void* buf, std::size_t n) {
  for (;;) {
    const int got = thread_ring().run(
        [&](io_uring_sqe* sqe) { io_uring_prep_recv(sqe, fd_, buf, n, MSG_DONTWAIT); });
    if (got == -EINTR) continue;
    return got;
  }
}

long UringSocket::recv_some(void* buf, std::size_t n) {
  for (;;) {
    const int got = thread_ring().run_within(
        [&](io_uring_sqe* sqe) { io_uring_prep_recv(sqe, fd_, buf, n, 0); }, recv_silence_ms_);
    if (got == -EINTR || got == -EAGAIN) continue;
    return got;
  }
}

int UringSocket::recv_all(std::span<const iovec> iov) {
  int wait_ms = recv_silence_ms_;  // the next receive's bound (next_receive_wait_ms)
  return transfer_all(iov, -ECONNRESET, [&](msghdr& msg) -> long {
    if (wait_ms < 0) return -ETIMEDOUT;
    // MSG_WAITALL: a receive the silence bound cancels reports what it took by then (or
    // -ECANCELED when nothing came, which run_within turns into -ETIMEDOUT).
    const int got = thread_ring().run_within(
        [&](io_uring_sqe* sqe) { io_uring_prep_recvmsg(sqe, fd_, &msg, MSG_WAITALL); }, wait_ms);
    wait_ms = next_receive_wait_ms(fd_, recv_silence_ms_, got, iov_bytes({msg.msg_iov, msg.msg_iovlen}));
    return got;
  });
}

int UringSocket::wait_readable(int timeout_ms) { return poll_readable(fd_, timeout_ms); }

void UringSocket::shutdown() { ::shutdown(fd_, SHUT_RDWR); }

}  // namespace rig::engine
