// The blocking-call backend: sendmsg/recvmsg on a blocking socket.
#pragma once

#include "rig/engine/socket.h"

namespace rig::engine {

// Waits for `fd` to be readable with poll(2): what both backends use for readiness, since the
// data path never depends on it (a readiness wait copies nothing).
int poll_readable(int fd, int timeout_ms);

class PlainSocket final : public Socket {
 public:
  explicit PlainSocket(int fd) : fd_(fd) {}
  ~PlainSocket() override;
  int send_all(std::span<const iovec> iov) override;
  long recv_some(void* buf, std::size_t n) override;
  long recv_ready(void* buf, std::size_t n) override;
  int recv_all(std::span<const iovec> iov) override;
  int wait_readable(int timeout_ms) override;
  void shutdown() override;
  int fd() const override { return fd_; }
  const char* backend() const override { return "plain"; }

 private:
  int fd_;
};

}  // namespace rig::engine
