#include "rig/engine/frame_reader.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

#include "rig/engine/env_settings.h"
#include "rig/engine/iov_cursor.h"
#include "rig/engine/plain_socket.h"
#include "rig/wire/codec.h"
#include "rig/wire/messages.h"

static_assert(rig::engine::FrameReader::kExactWindow ==
              sizeof(rig::wire::FrameHeader) + sizeof(rig::wire::Bytes));

namespace rig::engine {

FrameReader::FrameReader(Socket& socket, Counters& counters)
    : socket_(socket), counters_(counters), buffer_(new (std::align_val_t{64}) std::byte[kBufferBytes]) {}

FrameReader::~FrameReader() = default;

int FrameReader::fill(std::size_t at_least, bool frame_start) {
  if (end_ - begin_ >= at_least) return 0;
  if (before_read_) {
    if (const int rc = before_read_(); rc != 0) return rc;
  }
  if (begin_ + at_least > kBufferBytes) {
    // Keep 8-byte alignment of the buffered stream position modulo 8.
    const std::size_t left = end_ - begin_;
    const std::size_t shift = begin_ & ~std::size_t{7};
    std::memmove(buffer_.get() + (begin_ - shift), buffer_.get() + begin_, left);
    begin_ -= shift;
    end_ = begin_ + left;
  }
  // How much the next read may take: all the buffer has room for, or, while a large copy into
  // this process is expected (the probe, asked right before each read, so a copy recorded before
  // its bytes can arrive is always seen), only up to the next header so its payload can go
  // straight into place.
  auto room = [&] {
    const std::size_t all = kBufferBytes - end_;
    return probe_ && probe_() ? std::min(all, std::max(at_least, kExactWindow) - (end_ - begin_)) : all;
  };
  while (end_ - begin_ < at_least) {
    // A probe, an idle watch or polling mode set while gathering: their waits are not bounded
    // for the mark.
    if (gathering_ && !may_gather()) {
      if (const int rc = stop_gathering(); rc != 0) return rc;
    }
    long got = -EAGAIN;
    if (spin_us_ > 0) got = spin(room);
    if (probe_ || on_idle_) {
      // What is there already, without the readiness wait: one system call, not two, while
      // the stream is busy.
      if (got == -EAGAIN && spin_us_ == 0) got = socket_.recv_ready(buffer_.get() + end_, room());
      if (got == -EAGAIN) {
        if (const int rc = wait_for_bytes(); rc != 0) return rc;
      }
    }
    if (got == -EAGAIN && gathering_) got = gather(room, frame_start);
    if (got == -EAGAIN) got = socket_.recv_some(buffer_.get() + end_, room());
    if (got < 0) return static_cast<int>(got);
    if (got == 0) return end_ == begin_ ? 1 : -ECONNRESET;
    if (const int rc = note_read(); rc != 0) return rc;
    end_ += static_cast<std::size_t>(got);
    bump(counters_.bytes_received, static_cast<std::uint64_t>(got));
    bump(counters_.reads, 1);
  }
  return 0;
}

int FrameReader::wait_for_bytes() {
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

template <class Room>
long FrameReader::spin(Room room) {
  using clock = std::chrono::steady_clock;
  const clock::time_point until = clock::now() + std::chrono::microseconds(spin_us_);
  for (;;) {
    const long got = socket_.recv_ready(buffer_.get() + end_, room());
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

template <class Room>
long FrameReader::gather(Room room, bool frame_start) {
  long got = -EAGAIN;
  if (!frame_start || end_ > begin_) {
    // Inside a frame or a message: its rest is on its way, and a wait for the mark could hold
    // it back. Take what is there; if nothing is, read as before (below).
    got = socket_.recv_ready(buffer_.get() + end_, room());
    if (got > 0) return got;
  } else {
    int rc = socket_.push_posted();
    if (rc == 0) rc = poll_readable_ns(socket_.fd(), std::int64_t{gather_wait_us_} * 1000);
    if (rc == 0 || rc == -ETIME) {
      got = socket_.recv_ready(buffer_.get() + end_, room());
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

int FrameReader::note_read() {
  if (gather_bytes_ == 0 || gathering_) return 0;
  if (window_reads_++ == 0) window_messages_ = messages_;
  const int window = kGatherWindowReads << backoff_;
  if (window_reads_ <= window) return 0;
  // The frames read since the window began came with its first `window` reads.
  const bool busy = messages_ - window_messages_ > static_cast<std::uint64_t>(window) * kGatherMessagesPerRead;
  window_reads_ = 0;
  if (!busy || !may_gather()) return 0;
  if (set_recv_low_water(socket_.fd(), static_cast<int>(gather_bytes_)) != 0) {
    gather_bytes_ = 0;  // the socket refuses the mark: no gathering on it (reads go on as before)
    return 0;
  }
  gathering_ = true;
  marks_reached_ = 0;
  bump(counters_.gathers, 1);
  return 0;
}

int FrameReader::stop_gathering() {
  if (!gathering_) return 0;
  gathering_ = false;
  window_reads_ = 0;
  // A gathering that served little (a peer that waits for each answer, its frames fewer than
  // the mark) is started again only after a longer busy window: its waits cost that peer.
  backoff_ = marks_reached_ >= kGatherServed ? 0 : std::min(backoff_ + 1, kGatherMaxBackoff);
  return set_recv_low_water(socket_.fd(), 1);
}

int default_poll_us() {
  return env_settings().poll_us;
}

int FrameReader::next(wire::FrameHeader& header, std::string& why, bool within_message) {
  if (begin_ == end_) begin_ = end_ = 0;
  const int rc = fill(sizeof header, !within_message);
  if (rc != 0) return rc;
  std::memcpy(&header, buffer_.get() + begin_, sizeof header);
  begin_ += sizeof header;
  if (const char* bad = wire::check_header(header)) {
    why = std::string(bad) + " (type " + std::to_string(header.type) + ", length " +
          std::to_string(header.length) + ")";
    return -EPROTO;
  }
  bump(counters_.messages_received, 1);
  if (!within_message) ++messages_;  // the gathering counts messages: a handover and its bytes, one
  return 0;
}

int FrameReader::body(std::size_t n, std::span<const std::byte>& out) {
  if (n <= kBufferBytes - 8) {
    const int rc = fill(n);
    if (rc != 0) return rc == 1 ? -ECONNRESET : rc;
    std::byte* at = buffer_.get() + begin_;
    begin_ += n;
    if (reinterpret_cast<std::uintptr_t>(at) % 8 == 0) {
      out = {at, n};
      return 0;
    }
    if (large_size_ < n) {
      large_.reset(new (std::align_val_t{64}) std::byte[kBufferBytes]);
      large_size_ = kBufferBytes;
    }
    std::memcpy(large_.get(), at, n);
    out = {large_.get(), n};
    return 0;
  }
  if (large_size_ < n) {
    large_.reset(new (std::align_val_t{64}) std::byte[n]);
    large_size_ = n;
  }
  const iovec iov{large_.get(), n};
  const int rc = payload({&iov, 1});
  if (rc != 0) return rc;
  out = {large_.get(), n};
  return 0;
}

int FrameReader::payload(std::span<const iovec> iov) {
  IovCursor cur(iov);
  // Bytes already in the buffer: copy them out.
  std::size_t buffered = end_ - begin_;
  iovec window[IovCursor::kWindow];
  while (buffered > 0 && !cur.done()) {
    const std::size_t n = cur.window(window);
    std::size_t moved = 0;
    for (std::size_t i = 0; i < n && buffered > 0; ++i) {
      const std::size_t k = std::min(buffered, window[i].iov_len);
      std::memcpy(window[i].iov_base, buffer_.get() + begin_, k);
      begin_ += k;
      buffered -= k;
      moved += k;
      if (k < window[i].iov_len) break;
    }
    bump(counters_.payload_bytes_copied, moved);
    cur.advance(moved);
  }
  if (cur.done()) return 0;
  if (const int rc = stop_gathering(); rc != 0) return rc;
  if (before_read_) {
    if (const int rc = before_read_(); rc != 0) return rc;
  }
  // The rest straight into place. Rebuild the remaining iov list window by window.
  while (!cur.done()) {
    const std::size_t n = cur.window(window);
    const std::size_t bytes = iov_bytes({window, n});
    const int rc = socket_.recv_all({window, n});
    if (rc != 0) return rc;
    bump(counters_.bytes_received, bytes);
    bump(counters_.payload_bytes_direct, bytes);
    cur.advance(bytes);
  }
  return 0;
}

int FrameReader::skip(std::size_t n) {
  while (n > 0) {
    if (begin_ == end_) {
      begin_ = end_ = 0;
      const int rc = fill(1);
      if (rc != 0) return rc == 1 ? -ECONNRESET : rc;
    }
    const std::size_t k = std::min(n, end_ - begin_);
    begin_ += k;
    n -= k;
  }
  return 0;
}

}  // namespace rig::engine
