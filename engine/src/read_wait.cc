#include "rig/engine/read_wait.h"

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "rig/engine/plain_socket.h"

namespace rig::engine {

long ReadWait::read(std::byte* at, const std::function<std::size_t()>& room, bool message_start) {
  // A probe, an idle watch or polling mode set while gathering: their waits are not bounded for
  // the mark.
  if (gathering_ && !may_gather()) {
    if (const int rc = stop_gathering(); rc != 0) return rc;
  }
  long got = -EAGAIN;
  if (spin_us_ > 0) got = spin(at, room);
  if (readiness_first_ || on_idle_) {
    // What is there already, without the readiness wait: one system call, not two, while the
    // stream is busy.
    if (got == -EAGAIN && spin_us_ == 0) got = socket_.recv_ready(at, room());
    if (got == -EAGAIN) {
      if (const int rc = wait_for_bytes(); rc != 0) return rc;
    }
  }
  if (got == -EAGAIN && gathering_) got = gather(at, room, message_start);
  if (got == -EAGAIN) got = socket_.recv_some(at, room());
  if (got > 0) note_read();
  return got;
}

int ReadWait::wait_for_bytes() {
  const bool woken = on_idle_ && wake_fd_ >= 0;
  std::int64_t silent_ms = 0;
  for (;;) {
    if (woken && arm_) {
      if (const int rc = arm_(); rc != 0) return rc;
    }
    const int interval = on_idle_ ? idle_interval_ms_ : -1;
    const int rc = woken ? poll_readable_or_event(socket_.fd(), wake_fd_, interval) : socket_.wait_readable(interval);
    if (rc == 0) return 0;
    if (rc == 1) {  // the owner's wake: act on it now, then wait on
      if (const int stop = on_idle_(silent_ms); stop != 0) return stop;
      continue;
    }
    if (rc != -ETIME) return rc;
    silent_ms += idle_interval_ms_;
    if (const int stop = on_idle_(silent_ms); stop != 0) return stop;
  }
}

long ReadWait::spin(std::byte* at, const std::function<std::size_t()>& room) {
  using clock = std::chrono::steady_clock;
  const clock::time_point until = clock::now() + std::chrono::microseconds(spin_us_);
  for (;;) {
    const long got = socket_.recv_ready(at, room());
    if (got != -EAGAIN) return got;
    bump(counters_.spin_reads, 1);
    if (on_spin_) {
      // Any non-zero return ends the read with an error (-EAGAIN or a positive one would read as
      // "no byte yet" or a count).
      if (const int rc = on_spin_(); rc != 0) return rc < 0 && rc != -EAGAIN ? rc : -EIO;
    }
    if (clock::now() >= until) return got;
  }
}

long ReadWait::gather(std::byte* at, const std::function<std::size_t()>& room, bool message_start) {
  long got = -EAGAIN;
  if (!message_start) {
    // Inside a frame or a message: its rest is on its way, and a wait for the mark could hold
    // it back. Take what is there; if nothing is, read as before (below).
    got = socket_.recv_ready(at, room());
    if (got > 0) return got;
  } else {
    int rc = socket_.push_posted();
    if (rc == 0) rc = poll_readable_ns(socket_.fd(), std::int64_t{gather_wait_us_} * 1000);
    if (rc == 0 || rc == -ETIME) {
      got = socket_.recv_ready(at, room());
      if (rc == 0 && got > 0) {
        ++marks_reached_;
        return got;
      }
    } else {
      got = rc;  // the push or the wait failed
    }
  }
  // The wait ran out (the stream slowed), nothing came, or a call failed: reads wait for any
  // byte again, before anything else reads this socket.
  const int rc = stop_gathering();
  if (got == -EAGAIN && rc != 0) return rc;
  return got;  // -EAGAIN: the caller reads as before
}

void ReadWait::note_read() {
  if (gather_bytes_ == 0 || gathering_) return;
  if (window_reads_++ == 0) window_messages_ = messages_;
  const int window = kGatherWindowReads << backoff_;
  if (window_reads_ <= window) return;
  // The frames read since the window began came with its first `window` reads.
  const bool busy = messages_ - window_messages_ > static_cast<std::uint64_t>(window) * kGatherMessagesPerRead;
  window_reads_ = 0;
  if (!busy || !may_gather()) return;
  if (set_recv_low_water(socket_.fd(), static_cast<int>(gather_bytes_)) != 0) {
    gather_bytes_ = 0;  // the socket refuses the mark: no gathering on it (reads go on as before)
    return;
  }
  gathering_ = true;
  marks_reached_ = 0;
  bump(counters_.gathers, 1);
}

int ReadWait::stop_gathering() {
  if (!gathering_) return 0;
  gathering_ = false;
  window_reads_ = 0;
  // A gathering that served little (a peer that waits for each answer, its frames fewer than
  // the mark) is started again only after a longer busy window: its waits cost that peer.
  backoff_ = marks_reached_ >= kGatherServed ? 0 : std::min(backoff_ + 1, kGatherMaxBackoff);
  return set_recv_low_water(socket_.fd(), 1);
}

}  // namespace rig::engine
