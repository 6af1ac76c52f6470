// The blocking-call backend: sendmsg/recvmsg on a blocking socket.
#pragma once

#include "rig/engine/socket.h"

namespace rig::engine {

class PlainSocket final : public Socket {
 public:
  explicit PlainSocket(int fd) : fd_(fd) {}
  ~PlainSocket() override;
  int send_all(std::span<const iovec> iov) override;
  long recv_some(void* buf, std::size_t n) override;
  int recv_all(std::span<const iovec> iov) override;
  int wait_readable() override;
  void shutdown() override;
  int fd() const override { return fd_; }
  const char* backend() const override { return "plain"; }

 private:
  int fd_;
};

}  // namespace rig::engine
