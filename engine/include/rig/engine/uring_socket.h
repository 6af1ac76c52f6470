// The io_uring backend. Each thread that calls it uses a ring of its own (created on first use,
// SINGLE_ISSUER|DEFER_TASKRUN where the kernel has them), so no ring is shared between threads:
// the calling thread submits its SQE and reaps its own CQE.
#pragma once

#include "rig/engine/socket.h"

namespace rig::engine {

class UringSocket final : public Socket {
 public:
  explicit UringSocket(int fd) : fd_(fd) {}
  ~UringSocket() override;
  int send_all(std::span<const iovec> iov) override;
  long recv_some(void* buf, std::size_t n) override;
  int recv_all(std::span<const iovec> iov) override;
  int wait_readable(int timeout_ms) override;
  void shutdown() override;
  int fd() const override { return fd_; }
  const char* backend() const override { return "io_uring"; }

 private:
  int fd_;
};

}  // namespace rig::engine
