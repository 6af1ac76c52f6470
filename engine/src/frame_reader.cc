#include "rig/engine/frame_reader.h"

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

#include "rig/engine/env_settings.h"
#include "rig/engine/iov_cursor.h"
#include "rig/wire/codec.h"
#include "rig/wire/messages.h"

static_assert(rig::engine::FrameReader::kExactWindow ==
              sizeof(rig::wire::FrameHeader) + sizeof(rig::wire::Bytes));

namespace rig::engine {

FrameReader::FrameReader(Socket& socket, Counters& counters)
    : socket_(socket),
      counters_(counters),
      buffer_(new (std::align_val_t{64}) std::byte[kBufferBytes]),
      wait_(socket, counters) {}

FrameReader::~FrameReader() = default;

int FrameReader::fill(std::size_t at_least, std::size_t reach, bool frame_start) {
  assert(reach >= at_least);
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
  // its bytes can arrive is always seen), only up to `reach` so its payload can go straight
  // into place.
  const std::function<std::size_t()> room = [&] {
    const std::size_t all = kBufferBytes - end_;
    return probe_ && probe_() ? std::min(all, reach - (end_ - begin_)) : all;
  };
  while (end_ - begin_ < at_least) {
    const long got = wait_.read(buffer_.get() + end_, room, frame_start && end_ == begin_);
    if (got < 0) return static_cast<int>(got);
    if (got == 0) return end_ == begin_ ? 1 : -ECONNRESET;
    end_ += static_cast<std::size_t>(got);
    bump(counters_.bytes_received, static_cast<std::uint64_t>(got));
    bump(counters_.reads, 1);
  }
  return 0;
}

int default_poll_us() {
  return env_settings()->poll_us;
}

wire::Outcome FrameReader::next(wire::FrameHeader& header, bool within_message) {
  if (begin_ == end_) begin_ = end_ = 0;
  const int rc = fill(sizeof header, kExactWindow, !within_message);
  if (rc == 1 && !within_message) return wire::Outcome::failed(wire::kStreamEnded, "the peer closed the connection");
  if (rc != 0) {  // inside a message, the stream's end is a lost connection (as in body())
    const int err = rc == 1 ? -ECONNRESET : rc;
    return wire::Outcome::failed(err, std::string("connection lost: ") + std::strerror(-err));
  }
  std::memcpy(&header, buffer_.get() + begin_, sizeof header);
  begin_ += sizeof header;
  if (const char* bad = wire::check_header(header)) {
    return wire::Outcome::failed(-EPROTO, std::string(bad) + " (type " + std::to_string(header.type) +
                                              ", length " + std::to_string(header.length) + ")");
  }
  bump(counters_.messages_received, 1);
  if (!within_message) wait_.count_message();  // a handover and its bytes are one message
  return {};
}

int FrameReader::body(std::size_t n, std::span<const std::byte>& out) {
  if (n <= kBufferBytes - 8) {
    const int rc = fill(n, n);
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
  if (const int rc = wait_.stop_gathering(); rc != 0) return rc;
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
      const int rc = fill(1, std::min(n, kBufferBytes));
      if (rc != 0) return rc == 1 ? -ECONNRESET : rc;
    }
    const std::size_t k = std::min(n, end_ - begin_);
    begin_ += k;
    n -= k;
  }
  return 0;
}

}  // namespace rig::engine
