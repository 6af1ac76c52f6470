// The reference tools' socket calls: each call into the kernel is counted in the caller's
// counter (EINTR retries included), and a failure throws std::system_error with errno's text.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <system_error>

namespace rig::bench::refs {

// Sends all n bytes, by one sendmsg when the kernel takes them at once (a blocking socket does,
// short of a signal), more otherwise.
inline void send_all(int fd, const void* data, std::size_t n, std::uint64_t& calls) {
  auto* p = static_cast<const std::byte*>(data);
  while (n > 0) {
    iovec iov{const_cast<std::byte*>(p), n};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    ++calls;
    const ssize_t r = ::sendmsg(fd, &msg, MSG_NOSIGNAL);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "sendmsg");
    }
    p += r;
    n -= static_cast<std::size_t>(r);
  }
}

// One recv of at most n bytes; returns what it got, 0 at the end of the stream.
inline std::size_t recv_some(int fd, void* data, std::size_t n, int flags, std::uint64_t& calls) {
  for (;;) {
    ++calls;
    const ssize_t r = ::recv(fd, data, n, flags);
    if (r >= 0) return static_cast<std::size_t>(r);
    if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "recv");
  }
}

}  // namespace rig::bench::refs
