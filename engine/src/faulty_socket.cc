#include "rig/engine/faulty_socket.h"

#include <cerrno>
#include <chrono>
#include <thread>

#include "rig/engine/iov_cursor.h"

namespace rig::engine {

int FaultySocket::send_all(std::span<const iovec> iov) {
  IovCursor cur(iov);
  iovec window[IovCursor::kWindow];
  while (!cur.done()) {
    std::size_t n = cur.window(window);
    std::size_t bytes = 0;
    // Trim the window to the chunk limit.
    if (faults_.max_send_chunk > 0) {
      std::size_t left = faults_.max_send_chunk, i = 0;
      for (; i < n && left > 0; ++i) {
        if (window[i].iov_len > left) window[i].iov_len = left;
        left -= window[i].iov_len;
      }
      n = i;
    }
    for (std::size_t i = 0; i < n; ++i) bytes += window[i].iov_len;
    if (faults_.send_delay_us > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(faults_.send_delay_us));
    }
    const std::uint64_t before = sent_.load(std::memory_order_relaxed);
    if (faults_.lose_after_bytes > 0 && before + bytes > faults_.lose_after_bytes) {
      inner_->shutdown();
      return -ECONNRESET;
    }
    const int rc = inner_->send_all({window, n});
    if (rc != 0) return rc;
    sent_.store(before + bytes, std::memory_order_relaxed);
    cur.advance(bytes);
  }
  return 0;
}

long FaultySocket::send_ready(std::span<const iovec> iov) {
  if (faults_.max_send_chunk == 0) return inner_->send_ready(iov);
  IovCursor cur(iov);
  iovec window[IovCursor::kWindow];
  std::size_t n = cur.window(window), left = faults_.max_send_chunk, i = 0;
  for (; i < n && left > 0; ++i) {
    if (window[i].iov_len > left) window[i].iov_len = left;
    left -= window[i].iov_len;
  }
  return inner_->send_ready({window, i});
}

long FaultySocket::recv_some(void* buf, std::size_t n) {
  if (faults_.max_recv_chunk > 0 && n > faults_.max_recv_chunk) n = faults_.max_recv_chunk;
  return inner_->recv_some(buf, n);
}

long FaultySocket::recv_ready(void* buf, std::size_t n) {
  if (faults_.max_recv_chunk > 0 && n > faults_.max_recv_chunk) n = faults_.max_recv_chunk;
  return inner_->recv_ready(buf, n);
}

int FaultySocket::recv_all(std::span<const iovec> iov) {
  if (faults_.max_recv_chunk == 0) return inner_->recv_all(iov);
  IovCursor cur(iov);
  iovec window[IovCursor::kWindow];
  while (!cur.done()) {
    cur.window(window);
    const std::size_t k = std::min(window[0].iov_len, faults_.max_recv_chunk);
    const long got = inner_->recv_some(window[0].iov_base, k);
    if (got < 0) return static_cast<int>(got);
    if (got == 0) return -ECONNRESET;
    cur.advance(static_cast<std::size_t>(got));
  }
  return 0;
}

}  // namespace rig::engine
