// The io_uring backend. Receives go through a ring per calling thread (created on first use,
// SINGLE_ISSUER|DEFER_TASKRUN where the kernel has them): the receiving thread submits its SQE
// and reaps its own CQE. Readiness waits use poll(2). Sends go through one ring of the socket's own, used
// by one sender at a time (see socket.h: the turn holder), so that the socket's registered
// buffers live on the ring that sends them and every zero-copy notification is reaped by the
// send that caused it; a send by copy below kRingSendMinBytes goes there only when an SQ thread
// polls that ring, and by sendmsg(2) otherwise (one call either way, and sendmsg's is the
// cheaper).
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "rig/engine/plain_socket.h"
#include "rig/engine/socket.h"

namespace rig::engine {

class Ring;

class UringSocket final : public Socket {
 public:
  UringSocket(int fd, SendOptions send);
  ~UringSocket() override;
  // At or above the zero-copy threshold, a SENDMSG_ZC that returns after its notification CQE:
  // borrows `iov` until it returns. -EOPNOTSUPP/-EINVAL from the kernel turn zero-copy off for
  // the socket's life, -ENOMEM (RLIMIT_MEMLOCK) for the rest of the call; either way the bytes
  // go by copy (counted in zc_fallbacks). The notification comes once the kernel has freed the
  // packets (the peer acknowledged them, or the connection died), so a zero-copy send waits for
  // the peer like a send on a full socket buffer. shutdown() ends the send but not the loan of
  // bytes already queued: with a hung peer that lasts until TCP_USER_TIMEOUT kills the
  // connection (15 s, tcp.h), which frees the packets.
  int send_all(std::span<const iovec> iov) override;
  int register_send_buffers(std::span<const iovec> bufs) override;
  // `head` by copy, then [p, p + n) with SEND_ZC from the registered buffer when head + n
  // reaches the threshold (returns after its notification CQE), else all by copy in one
  // sendmsg.
  int send_fixed(std::span<const iovec> head, const void* p, std::size_t n, unsigned index) override;
  // Below the zero-copy threshold, a SENDMSG prepared on the calling thread's receive ring and
  // submitted with its next receive; else as the default (sent at once).
  int post_send(std::span<const iovec> iov) override;
  int finish_send() override;
  int push_posted() override;
  long send_ready(std::span<const iovec> iov) override { return send_now(fd_, iov); }
  long recv_some(void* buf, std::size_t n) override;
  long recv_ready(void* buf, std::size_t n) override;
  int recv_all(std::span<const iovec> iov) override;
  int wait_readable(int timeout_ms) override;
  void set_recv_silence_ms(int ms) override { recv_silence_ms_ = ms; }
  void shutdown() override;
  int fd() const override { return fd_; }
  const char* backend() const override { return "io_uring"; }

  std::size_t send_zc_bytes() const { return zc_bytes_; }

 private:
  // A result of zc_op meaning "the kernel refused zero-copy: send this by copy".
  static constexpr long kRefused = -1'000'000;
  // Sends by copy of at least this many bytes go through the ring even where no SQ thread polls
  // it. Measured on 2 cores: through the ring, 64 MiB copies cost 0.92x the CPU and 0.82x the
  // context switches per GiB that they cost by sendmsg(2); 1 MiB copies cost the same either way
  // (bench/RESULTS.md, "The copies' cost per GiB against the starting commit"). Why is not
  // established. 64 KiB lies far above any tiny handover's frame, so those keep sendmsg's gain;
  // sizes between 64 KiB and 1 MiB were not measured.
  static constexpr std::size_t kRingSendMinBytes = 64 * 1024;
  int send_iov(std::span<const iovec> iov, int flags);
  template <class Prep>
  long zc_op(Prep prep);

  const int fd_;
  int recv_silence_ms_ = 0;  // set before use; read by the receiving thread only
  // Sender state: only the current sender touches it (ordered by the send turn, see socket.h).
  std::size_t zc_bytes_;    // 0: no zero-copy (configured off, or the kernel refused it)
  unsigned zc_flags_;       // IORING_SEND_ZC_REPORT_USAGE until a kernel rejects it
  bool registered_ = false;
  Counters* counters_;
  std::unique_ptr<Ring> send_ring_;
  // The posted send (the poster's thread only): the ring it waits on, its pieces and size.
  Ring* posted_ring_ = nullptr;
  std::vector<iovec> posted_iov_;
  msghdr posted_msg_{};
  std::size_t posted_bytes_ = 0;
};

}  // namespace rig::engine
