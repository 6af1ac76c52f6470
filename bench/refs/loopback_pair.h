// Two ends of one TCP connection over loopback (127.0.0.1), TCP_NODELAY on both as on rig's
// own sockets, for the reference tools that run both ends in one process.
#pragma once

#include <unistd.h>

#include <utility>

namespace rig::bench::refs {

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

struct LoopbackPair {
  Fd client;  // the end that connected
  Fd server;  // the end that was accepted
};

// Listens on an ephemeral port of 127.0.0.1, connects, accepts, sets TCP_NODELAY on both ends.
// Throws std::system_error naming the call and errno's text.
LoopbackPair loopback_pair();

}  // namespace rig::bench::refs
