// The blocking-call backend: sendmsg/recvmsg on a blocking socket.
#pragma once

#include <cstdint>

#include "rig/engine/socket.h"

namespace rig::engine {

// Waits for `fd` to be readable with poll(2): what both backends use for readiness, since the
// data path never depends on it (a readiness wait copies nothing).
int poll_readable(int fd, int timeout_ms);
// The same with a bound in nanoseconds (ppoll(2); negative: no bound), for waits shorter than a
// millisecond.
int poll_readable_ns(int fd, std::int64_t timeout_ns);
// Waits for `fd` to be readable or `event_fd` (an eventfd) to be written, for at most
// timeout_ms (negative: no bound): 0 when fd is readable (or at its end or in error; an event
// that came too stays for the next call), 1 when only the event came (its count read away),
// -ETIME once the time is up, or -errno.
int poll_readable_or_event(int fd, int event_fd, int timeout_ms);
// Sets the socket's receive low-water mark (SO_RCVLOWAT): a readiness wait ends, and a
// sleeping reader is woken, only once `bytes` are there. 0 or -errno.
int set_recv_low_water(int fd, int bytes);
// One non-blocking sendmsg of `iov` (a control frame's few bytes): what both backends use for
// Socket::send_ready.
long send_now(int fd, std::span<const iovec> iov);

class PlainSocket final : public Socket {
 public:
  explicit PlainSocket(int fd) : fd_(fd) {}
  ~PlainSocket() override;
  int send_all(std::span<const iovec> iov) override;
  long send_ready(std::span<const iovec> iov) override;
  long recv_some(void* buf, std::size_t n) override;
  long recv_ready(void* buf, std::size_t n) override;
  int recv_all(std::span<const iovec> iov) override;
  int wait_readable(int timeout_ms) override;
  void set_recv_silence_ms(int ms) override;
  void shutdown() override;
  int fd() const override { return fd_; }
  const char* backend() const override { return "plain"; }

 private:
  int fd_;
  int recv_silence_ms_ = 0;  // set before use; read by the receiving thread only
};

}  // namespace rig::engine
