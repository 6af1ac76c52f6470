// A connected stream socket behind a small interface, so that the transport can run on io_uring
// or on plain blocking calls, and tests can inject short writes, delays and loss.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace rig::engine {

class Socket {
 public:
  virtual ~Socket() = default;

  // Sends every byte of `iov`, looping on partial sends. Returns 0 once the local kernel has
  // taken all of them, or -errno (-EPIPE/-ECONNRESET once the peer or a shutdown closed it).
  // Borrows the iov's memory until it returns.
  virtual int send_all(std::span<const iovec> iov) = 0;

  // Receives at least one and at most `n` bytes into `buf`. Returns the count, 0 at end of
  // stream, or -errno.
  virtual long recv_some(void* buf, std::size_t n) = 0;

  // Fills every byte of `iov`. Returns 0, -ECONNRESET at end of stream, or -errno.
  virtual int recv_all(std::span<const iovec> iov) = 0;

  // Blocks until the socket has bytes to read, its end of stream, or an error, for at most
  // timeout_ms (negative: no bound). Returns 0, -ETIME once the time is up, or -errno.
  virtual int wait_readable(int timeout_ms) = 0;

  // Shuts both directions down: every call blocked on this socket returns.
  virtual void shutdown() = 0;

  virtual int fd() const = 0;
  virtual const char* backend() const = 0;
};

enum class Backend { kUring, kPlain };

// The backend a new connection uses: RIG_SOCKET_BACKEND=plain|uring if set, else io_uring when
// the kernel lets this process set up a ring, else plain sockets.
Backend default_backend();
const char* backend_name(Backend b);
// Whether io_uring rings can be set up here (probed once).
bool uring_available();

// Takes ownership of the connected socket `fd`.
std::unique_ptr<Socket> make_socket(int fd, Backend backend);

}  // namespace rig::engine
