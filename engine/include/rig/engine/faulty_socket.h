// A Socket that wraps another and injects what real networks do: short writes and reads,
// delays, and a connection lost after a number of bytes. For tests.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "rig/engine/socket.h"

namespace rig::engine {

struct Faults {
  std::size_t max_send_chunk = 0;    // >0: each send system call carries at most this many bytes
  std::size_t max_recv_chunk = 0;    // >0: each receive returns at most this many bytes
  std::uint32_t send_delay_us = 0;   // sleep before each send chunk
  std::uint64_t lose_after_bytes = 0;  // >0: the connection breaks once this many bytes were sent
};

class FaultySocket final : public Socket {
 public:
  FaultySocket(std::unique_ptr<Socket> inner, Faults faults)
      : inner_(std::move(inner)), faults_(faults) {}
  int send_all(std::span<const iovec> iov) override;
  // Takes at most max_send_chunk bytes (the short write a caller must finish).
  long send_ready(std::span<const iovec> iov) override;
  long recv_some(void* buf, std::size_t n) override;
  long recv_ready(void* buf, std::size_t n) override;
  int recv_all(std::span<const iovec> iov) override;
  int wait_readable(int timeout_ms) override { return inner_->wait_readable(timeout_ms); }
  void set_recv_silence_ms(int ms) override { inner_->set_recv_silence_ms(ms); }
  void shutdown() override { inner_->shutdown(); }
  int fd() const override { return inner_->fd(); }
  const char* backend() const override { return inner_->backend(); }

 private:
  std::unique_ptr<Socket> inner_;
  Faults faults_;
  // Only the thread holding the connection's send turn sends; the turn's release/acquire
  // orders successive senders, so relaxed suffices here.
  std::atomic<std::uint64_t> sent_{0};
};

}  // namespace rig::engine
