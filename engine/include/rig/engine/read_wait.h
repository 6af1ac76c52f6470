// How the reader of one connection (frame_reader.h) waits for bytes: the wait policy. A read
// that finds nothing may spin (polling mode), wait for readiness with an idle watch and an
// owner's wake, or gather (wait for a low-water mark of bytes) before it blocks in the socket.
// The reader owns the buffer and the frames; this decides only how each read of it waits.
// Used by the reader's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "rig/engine/counters.h"
#include "rig/engine/socket.h"

namespace rig::engine {

class ReadWait {
 public:
  ReadWait(Socket& socket, Counters& counters) : socket_(socket), counters_(counters) {}

  // One read of what the socket has, into `at`, of at most room() bytes (asked right before the
  // read), waiting as set below: the count, 0 at the end of the stream, or -errno. message_start:
  // the read is for a message's first header, none of whose bytes were read yet (only such a
  // read waits for the gathering's mark).
  long read(std::byte* at, const std::function<std::size_t()>& room, bool message_start);

  // The reader waits for readiness before each read that would block (its exact probe is set:
  // it must choose the read's size after the bytes came). Rules gathering out, like the below.
  void set_readiness_first(bool on) { readiness_first_ = on; }

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
  // kGatherMessagesPerRead messages each on average (count_message), the reader sets the
  // socket's receive low-water mark to `bytes` (SO_RCVLOWAT), and before each read of a
  // message's first frame waits up to `wait_us` for that many bytes to be there (a readiness
  // wait, which the mark governs: the bytes that come meanwhile wake nobody), then takes what
  // is there. So one wake, one read and one batch of the owner's answers serve many frames.
  // The owner's posted send (before_read) goes into the kernel before the wait
  // (Socket::push_posted): nothing it owes the peer waits it out. Each wait holds the frames
  // that come during it at most `wait_us` (plus the thread's timer slack); the wait that runs
  // out holds them that long, and ends the gathering: the mark goes back to one byte and reads
  // wait for any byte again. A read inside a frame or a message never waits for the mark: it
  // takes what is there, and if nothing is, or before a payload received into place
  // (stop_gathering), the gathering ends. A gathering that reached the mark fewer than
  // kGatherServed times (a short burst, or a peer that sends a few frames and waits for their
  // answers) doubles the busy window the next one needs, up to kGatherMaxBackoff times. A peer
  // that sends one frame and waits for its answer never starts one. Never with the readiness
  // wait, the idle watch or polling mode (setting one ends it). 0 bytes or 0 us: off (the
  // default). A socket that refuses the mark turns it off.
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
  // One more message's first frame read (the gathering counts messages, not frames).
  void count_message() { ++messages_; }
  // Ends the gathering (the mark back to one byte): 0 or -errno.
  int stop_gathering();

 private:
  // The readiness wait of a read with a probe or an idle watch: until the socket is readable
  // (0), or on_idle or arm ends it (their -errno); ticks and wakes run on_idle on the way.
  int wait_for_bytes();
  // recv_ready into `at` for room() bytes, tried until bytes (or an error, or the end) come or
  // spin_us_ passed: the count, or -EAGAIN.
  long spin(std::byte* at, const std::function<std::size_t()>& room);
  // The gathering read: pushes the posted send, waits up to gather_wait_us_ for the mark, takes
  // what is there. The count, or -EAGAIN once the gathering ended (the caller reads as before).
  long gather(std::byte* at, const std::function<std::size_t()>& room, bool message_start);
  // Whether nothing rules gathering out: no readiness wait, idle watch or polling mode (their
  // waits are not bounded for the mark).
  bool may_gather() const { return !readiness_first_ && !on_idle_ && spin_us_ == 0; }
  // Counts a read towards the gathering, and starts it after a busy window of reads.
  void note_read();

  Socket& socket_;
  Counters& counters_;
  bool readiness_first_ = false;
  int idle_interval_ms_ = -1;
  int spin_us_ = 0;
  std::function<int(std::int64_t)> on_idle_;
  std::function<int()> on_spin_;
  int wake_fd_ = -1;  // set_wake: ends the idle watch's waits early
  std::function<int()> arm_;
  std::size_t gather_bytes_ = 0;  // 0: no gathering
  int gather_wait_us_ = 0;
  std::uint64_t messages_ = 0;         // messages' first frames read (count_message)
  int window_reads_ = 0;               // reads counted towards the gathering so far
  std::uint64_t window_messages_ = 0;  // messages_ when the window began
  int marks_reached_ = 0;              // gathered waits that reached the mark, this gathering
  int backoff_ = 0;                    // the busy window is kGatherWindowReads << backoff_
  bool gathering_ = false;             // the socket's low-water mark is gather_bytes_
};

}  // namespace rig::engine
