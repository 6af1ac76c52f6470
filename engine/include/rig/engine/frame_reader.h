// The receiving side of one connection: reads frames through a small buffer, and receives a
// kBytes payload straight into the memory its copy names; how each read waits is its ReadWait's
// (read_wait.h). Used by one thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <span>
#include <string>

#include "rig/engine/counters.h"
#include "rig/engine/read_wait.h"
#include "rig/engine/socket.h"
#include "rig/export.h"
#include "rig/wire/frame_header.h"
#include "rig/wire/outcome.h"

namespace rig::engine {

class FrameReader {
 public:
  static constexpr std::size_t kBufferBytes = 64 * 1024;

  FrameReader(Socket& socket, Counters& counters);
  ~FrameReader();

  // Reads and checks the next frame header. Fails with wire::kStreamEnded at a clean end of
  // stream between messages (within one, it is -ECONNRESET), -EPROTO for a header that check_header rejects (the reason names
  // it), or the read's -errno (the reason says the connection was lost; a caller that knows
  // why, such as its silence bound for -ETIMEDOUT, says so instead).
  // within_message: the frame continues a message whose first frame was read (a handover's
  // bytes): its read never waits for the gathering's mark.
  wire::Outcome next(wire::FrameHeader& header, bool within_message = false);

  // Reads the next `n` bytes of the frame into 8-byte aligned memory, valid until the next
  // call. Returns 0 or -errno.
  int body(std::size_t n, std::span<const std::byte>& out);

  // Receives exactly iov_bytes(iov) bytes of payload into `iov`: the bytes already buffered are
  // copied (and counted as copied), the rest is received directly. Returns 0 or -errno.
  int payload(std::span<const iovec> iov);

  // Reads and drops `n` bytes of the stream.
  int skip(std::size_t n);

  // Exact mode: read no further than the frame header and fixed part being read (at most
  // kExactWindow bytes ahead), so that a large payload that follows is received straight into
  // place, none of it through the buffer. Costs more system calls on a stream of small frames:
  // the owner turns it on only while a large payload may come.
  static constexpr std::size_t kExactWindow = sizeof(wire::FrameHeader) + 32;  // + a kBytes fixed part
  // The owner's answer to "may a large payload come now?". When set, the reader waits for the
  // socket to be readable before each read that would block, then asks it, so the choice is
  // made after the bytes came, never before (a read posted while idle cannot be resized).
  void set_exact_probe(std::function<bool()> probe) {
    probe_ = std::move(probe);
    wait_.set_readiness_first(static_cast<bool>(probe_));
  }

  // Called before every read of the socket (the reader has no whole frame left, or a payload
  // to receive): the owner flushes what it batched, so nothing it owes the peer waits behind
  // a read. A non-zero return (-errno) ends the read with that error.
  void set_before_read(std::function<int()> hook) { before_read_ = std::move(hook); }

  // How each read waits (read_wait.h): polling mode, the idle watch and the owner's wake,
  // gathering. Set before the first read; the policy's own comments say what each does.
  void set_spin_us(int us) { wait_.set_spin_us(us); }
  void set_spin_poll(std::function<int()> poll) { wait_.set_spin_poll(std::move(poll)); }
  void set_idle_watch(int interval_ms, std::function<int(std::int64_t silent_ms)> on_idle) {
    wait_.set_idle_watch(interval_ms, std::move(on_idle));
  }
  void set_wake(int event_fd, std::function<int()> arm) { wait_.set_wake(event_fd, std::move(arm)); }
  void set_gather(std::size_t bytes, int wait_us) { wait_.set_gather(bytes, wait_us); }
  // Whether the reader gathers now (the socket's low-water mark is set).
  bool gathering() const { return wait_.gathering(); }
  // The socket it reads (a failure's reason asks it whether TCP gave up: tcp_gave_up).
  int fd() const { return socket_.fd(); }

 private:
  // Reads until at_least bytes are buffered. reach: in exact mode, how many bytes from begin_ a
  // read may buffer (at least at_least): a header's kExactWindow, else exactly what is asked, so
  // no read runs past a kBytes frame's fixed part into its payload. frame_start: the bytes are
  // a frame's header, none of whose bytes were read yet (only such a read gathers).
  int fill(std::size_t at_least, std::size_t reach, bool frame_start = false);

  // Frees what `new (std::align_val_t{64}) std::byte[n]` made.
  struct AlignedDelete {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  using AlignedBytes = std::unique_ptr<std::byte[], AlignedDelete>;

  Socket& socket_;
  Counters& counters_;
  AlignedBytes buffer_;  // kBufferBytes, 64-byte aligned
  AlignedBytes large_;   // for bodies that do not fit or are misaligned
  std::size_t large_size_ = 0;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  std::function<bool()> probe_;
  std::function<int()> before_read_;
  ReadWait wait_;
};

}  // namespace rig::engine
