// The receiving side of one connection: reads frames through a small buffer, and receives a
// kBytes payload straight into the memory its copy names. Used by one thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <span>
#include <string>

#include "rig/engine/counters.h"
#include "rig/engine/socket.h"
#include "rig/export.h"
#include "rig/wire/frame_header.h"

namespace rig::engine {

class FrameReader {
 public:
  static constexpr std::size_t kBufferBytes = 64 * 1024;

  FrameReader(Socket& socket, Counters& counters);
  ~FrameReader();

  // Reads and checks the next frame header. Returns 0, 1 at a clean end of stream between
  // frames, or -errno (-EPROTO with `why` set for a header that check_header rejects).
  // within_message: the frame continues a message whose first frame was read (a handover's
  // bytes): its read never waits for the gathering's mark.
  int next(wire::FrameHeader& header, std::string& why, bool within_message = false);

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
  void set_exact_probe(std::function<bool()> probe) { probe_ = std::move(probe); }

  // Called before every read of the socket (the reader has no whole frame left, or a payload
  // to receive): the owner flushes what it batched, so nothing it owes the peer waits behind
  // a read. A non-zero return (-errno) ends the read with that error.
  void set_before_read(std::function<int()> hook) { before_read_ = std::move(hook); }

  // Polling mode, for latency: before a read would wait for bytes, the reader asks the socket
  // for them without waiting (recv_ready) again and again for up to `us` microseconds, and
  // sleeps only after that. Each try is a system call; the CPU it burns is the price of not
  // being woken (counted: Counters::spin_reads). 0 (the default): no spin.
  void set_spin_us(int us) { spin_us_ = us; }
  // For an owner whose work completes while the reader waits (a GPU's stream): called at each
  // try of the spin that found no byte, so the owner acts on what completed while the reader
  // spins, not only once the spin is over. A non-zero return (-errno) ends the read with it
  // (-EIO for one that is not a -errno other than -EAGAIN).
  void set_spin_poll(std::function<int()> poll) { on_spin_ = std::move(poll); }

  // Idle watch: while the reader waits for bytes, it calls on_idle(silent_ms) every
  // interval_ms with how long the stream has been silent; a non-zero return (-errno) ends the
  // wait with that error. Turns on the readiness wait, like the probe.
  void set_idle_watch(int interval_ms, std::function<int(std::int64_t silent_ms)> on_idle) {
    idle_interval_ms_ = interval_ms;
    on_idle_ = std::move(on_idle);
  }
  // With an idle watch, for an owner whose work completes while the reader waits (a GPU's
  // stream): before each readiness wait the reader calls arm() (a non-zero return, -errno,
  // ends the read), which asks for `event_fd` (an eventfd) to be written once there is
  // something to act on; the wait then also ends when it is, its count is read away, and
  // on_idle runs at once with the silence so far (the interval's clock is not advanced), then
  // the wait goes on. Bytes that come with the event are read first and the event ends the
  // next wait (a read of part of a frame waits again). The fd stays the owner's.
  void set_wake(int event_fd, std::function<int()> arm) {
    wake_fd_ = event_fd;
    arm_ = std::move(arm);
  }

  // Gathering, for a peer that streams small frames faster than one wake per read keeps up
  // with (a client pipelining tiny handovers): once kGatherWindowReads reads brought more than
  // kGatherMessagesPerRead messages each on average (first frames: a frame read with next()'s
  // within_message does not count), the reader sets the socket's receive low-water
  // mark to `bytes` (SO_RCVLOWAT), and before each read of a message's first frame waits up to
  // `wait_us` for that many bytes to be there (a readiness wait, which the mark governs: the
  // bytes that come meanwhile wake nobody), then takes what is there. So one wake, one read and
  // one batch of the owner's answers serve many frames. The owner's posted send (before_read)
  // goes into the kernel before the wait (Socket::push_posted): nothing it owes the peer waits
  // it out. Each wait holds the frames that come during it at most `wait_us` (plus the thread's
  // timer slack); the wait that runs out holds them that long, and ends the gathering: the mark
  // goes back to one byte and reads wait for any byte again. A read inside a frame or a message
  // (next()'s within_message, body(), payload()) never waits for the mark: it takes what is
  // there, and if nothing is, or before a payload received into place, the gathering ends.
  // A gathering that reached the mark fewer than kGatherServed times (a short burst, or a peer
  // that sends a few frames and waits for their answers) doubles the busy window the next one
  // needs, up to kGatherMaxBackoff times. A peer that sends one frame and waits for its answer
  // never starts one. Never with the exact probe, the idle watch or polling mode (setting one
  // ends it). 0 bytes or 0 us: off (the default). A socket that refuses the mark turns it off.
  static constexpr int kGatherWindowReads = 16;
  static constexpr int kGatherMessagesPerRead = 2;
  static constexpr int kGatherServed = 8;
  static constexpr int kGatherMaxBackoff = 6;
  void set_gather(std::size_t bytes, int wait_us) {
    gather_bytes_ = wait_us > 0 ? bytes : 0;
    gather_wait_us_ = wait_us;
  }
  // Whether the reader gathers now (the socket's low-water mark is set).
  bool gathering() const { return gathering_; }
  // The socket it reads (a failure's reason asks it whether TCP gave up: tcp_gave_up).
  int fd() const { return socket_.fd(); }

 private:
  // Reads until at_least bytes are buffered. frame_start: the bytes are a frame's header, none
  // of whose bytes were read yet (only such a read gathers).
  int fill(std::size_t at_least, bool frame_start = false);
  // The readiness wait of a read with a probe or an idle watch: until the socket is readable
  // (0), or on_idle or arm ends it (their -errno); ticks and wakes run on_idle on the way.
  int wait_for_bytes();
  // recv_ready at `at` for `room()` bytes, tried until bytes (or an error, or the end) come or
  // spin_us_ passed: the count, or -EAGAIN.
  template <class Room>
  long spin(Room room);
  // The gathering read: pushes the posted send, waits up to gather_wait_us_ for the mark, takes
  // what is there. The count, or -EAGAIN once the gathering ended (the caller reads as before).
  template <class Room>
  long gather(Room room, bool frame_start);
  // Whether nothing rules gathering out: no exact probe, idle watch or polling mode (their
  // waits are not bounded for the mark).
  bool may_gather() const { return !probe_ && !on_idle_ && spin_us_ == 0; }
  // Counts a read towards the gathering, and starts it after a busy window of reads.
  int note_read();
  int stop_gathering();

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
  int idle_interval_ms_ = -1;
  int spin_us_ = 0;
  std::function<int(std::int64_t)> on_idle_;
  std::function<int()> on_spin_;
  int wake_fd_ = -1;  // set_wake: ends the idle watch's waits early
  std::function<int()> arm_;
  std::size_t gather_bytes_ = 0;  // 0: no gathering
  int gather_wait_us_ = 0;
  std::uint64_t messages_ = 0;       // messages' first frames read (next() not within_message)
  int window_reads_ = 0;             // reads counted towards the gathering so far
  std::uint64_t window_messages_ = 0;  // messages_ when the window began
  int marks_reached_ = 0;            // gathered waits that reached the mark, this gathering
  int backoff_ = 0;                  // the busy window is kGatherWindowReads << backoff_
  bool gathering_ = false;    // the socket's low-water mark is gather_bytes_
};

}  // namespace rig::engine
