// Walks a caller's iovec array across partial transfers without copying or changing it.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>

#include <cstddef>
#include <span>

namespace rig::engine {

class IovCursor {
 public:
  // At most this many iovecs go into one system call or SQE.
  static constexpr std::size_t kWindow = 64;

  explicit IovCursor(std::span<const iovec> iov) : iov_(iov) { skip_empty(); }

  bool done() const { return index_ == iov_.size(); }

  // Writes the next window of what is left into out[0..kWindow) and returns how many.
  std::size_t window(iovec* out) const {
    std::size_t n = 0;
    for (std::size_t i = index_; i < iov_.size() && n < kWindow; ++i) {
      const std::size_t skip = (i == index_) ? offset_ : 0;
      if (iov_[i].iov_len == skip) continue;
      out[n].iov_base = static_cast<char*>(iov_[i].iov_base) + skip;
      out[n].iov_len = iov_[i].iov_len - skip;
      ++n;
    }
    return n;
  }

  // Consumes `n` bytes (at most what is left).
  void advance(std::size_t n) {
    while (n > 0 && index_ < iov_.size()) {
      const std::size_t left = iov_[index_].iov_len - offset_;
      if (n < left) {
        offset_ += n;
        return;
      }
      n -= left;
      ++index_;
      offset_ = 0;
    }
    skip_empty();
  }

 private:
  void skip_empty() {
    while (index_ < iov_.size() && iov_[index_].iov_len == offset_) {
      ++index_;
      offset_ = 0;
    }
  }

  std::span<const iovec> iov_;
  std::size_t index_ = 0;
  std::size_t offset_ = 0;
};

// Cuts a window (n iovecs at w) to its first max_bytes bytes; returns how many iovecs are left.
// max_bytes 0: the window as it is.
inline std::size_t trim_window(iovec* w, std::size_t n, std::size_t max_bytes) {
  if (max_bytes == 0) return n;
  std::size_t sum = 0;
  for (std::size_t k = 0; k < n; ++k) {
    if (w[k].iov_len >= max_bytes - sum) {
      w[k].iov_len = max_bytes - sum;
      return k + 1;
    }
    sum += w[k].iov_len;
  }
  return n;
}

// Moves every byte of `iov`, window by window: `op(msghdr&)` transfers what it can of one
// window and returns the count, or -errno (-EINTR and -EAGAIN are retried). A count of 0 means
// the stream ended: `on_zero` is returned. Returns 0 once every byte moved.
template <class Op>
int transfer_all(std::span<const iovec> iov, int on_zero, Op op) {
  IovCursor cur(iov);
  iovec window[IovCursor::kWindow];
  while (!cur.done()) {
    msghdr msg{};
    msg.msg_iov = window;
    msg.msg_iovlen = cur.window(window);
    const long n = op(msg);
    if (n == -EINTR || n == -EAGAIN) continue;
    if (n < 0) return static_cast<int>(n);
    if (n == 0) return on_zero;
    cur.advance(static_cast<std::size_t>(n));
  }
  return 0;
}

inline std::size_t iov_bytes(std::span<const iovec> iov) {
  std::size_t n = 0;
  for (const iovec& v : iov) n += v.iov_len;
  return n;
}

}  // namespace rig::engine

namespace rig::engine {
// An iovec over memory a send only reads.
inline iovec to_iov(const void* p, std::size_t n) { return {const_cast<void*>(p), n}; }
}  // namespace rig::engine
