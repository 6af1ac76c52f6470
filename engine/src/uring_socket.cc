#include "rig/engine/uring_socket.h"

#include <liburing.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "rig/engine/iov_cursor.h"
#include "rig/engine/plain_socket.h"
#include "ring_handoff.h"

namespace rig::engine {
namespace {

using detail::ring_created;
using detail::ring_destroyed;

// One ring per thread: only its thread submits to it and reaps it, so no ring state is shared.
class ThreadRing {
 public:
  ThreadRing() {
    io_uring_params p{};
    p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    int rc = io_uring_queue_init_params(16, &ring_, &p);
    if (rc < 0) {
      p = io_uring_params{};
      p.flags = IORING_SETUP_COOP_TASKRUN;
      rc = io_uring_queue_init_params(16, &ring_, &p);
    }
    if (rc < 0) rc = io_uring_queue_init(16, &ring_, 0);
    error_ = rc < 0 ? rc : 0;
    ring_created();
  }
  ~ThreadRing() {
    ring_destroyed();
    if (error_ == 0) io_uring_queue_exit(&ring_);
  }
  ThreadRing(const ThreadRing&) = delete;
  ThreadRing& operator=(const ThreadRing&) = delete;

  // Runs one prepared operation to completion and returns its result.
  template <class Prep>
  int run(Prep prep) {
    if (error_ != 0) return error_;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return -EBUSY;  // cannot happen: one operation in flight per ring
    prep(sqe);
    int rc = io_uring_submit_and_wait(&ring_, 1);
    if (rc < 0 && rc != -EINTR) return rc;
    io_uring_cqe* cqe = nullptr;
    for (;;) {
      rc = io_uring_wait_cqe(&ring_, &cqe);
      if (rc == -EINTR) continue;
      if (rc < 0) return rc;
      break;
    }
    const int res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    return res;
  }

 private:
  io_uring ring_{};
  int error_ = 0;
};

ThreadRing& thread_ring() {
  thread_local ThreadRing ring;
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
  if (const char* env = std::getenv("RIG_SOCKET_BACKEND")) {
    if (std::string_view(env) == "plain") return Backend::kPlain;
    if (std::string_view(env) == "uring") return Backend::kUring;
  }
  return uring_available() ? Backend::kUring : Backend::kPlain;
}

const char* backend_name(Backend b) { return b == Backend::kUring ? "io_uring" : "plain"; }

std::unique_ptr<Socket> make_socket(int fd, Backend backend) {
  if (backend == Backend::kUring && uring_available()) return std::make_unique<UringSocket>(fd);
  return std::make_unique<PlainSocket>(fd);
}

UringSocket::~UringSocket() { ::close(fd_); }

int UringSocket::send_all(std::span<const iovec> iov) {
  return transfer_all(iov, -EPIPE, [&](msghdr& msg) -> long {
    return thread_ring().run(
        [&](io_uring_sqe* sqe) { io_uring_prep_sendmsg(sqe, fd_, &msg, MSG_NOSIGNAL | MSG_WAITALL); });
  });
}

long UringSocket::recv_some(void* buf, std::size_t n) {
  for (;;) {
    const int got = thread_ring().run(
        [&](io_uring_sqe* sqe) { io_uring_prep_recv(sqe, fd_, buf, n, 0); });
    if (got == -EINTR || got == -EAGAIN) continue;
    return got;
  }
}

int UringSocket::recv_all(std::span<const iovec> iov) {
  return transfer_all(iov, -ECONNRESET, [&](msghdr& msg) -> long {
    return thread_ring().run([&](io_uring_sqe* sqe) { io_uring_prep_recvmsg(sqe, fd_, &msg, MSG_WAITALL); });
  });
}

int UringSocket::wait_readable(int timeout_ms) { return poll_readable(fd_, timeout_ms); }

void UringSocket::shutdown() { ::shutdown(fd_, SHUT_RDWR); }

}  // namespace rig::engine
