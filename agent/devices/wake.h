// A job's wake: an eventfd that the job's devices write once work they were asked about has
// completed (DeviceBackend::arm_wake), so the session's wait for the client ends then and reports it
// (FrameReader::set_wake) instead of at the idle watch's next tick. Shared: a GPU's driver
// thread may signal it after the job ended (a host function still queued on a stream), so the fd
// stays open until the last holder lets go.
#pragma once

#include <memory>

#include "rig/wire/outcome.h"

namespace rig::agent {

class Wake {
 public:
  // A new wake, or the eventfd's -errno (out of file descriptors: -EMFILE) and why.
  static wire::Result<std::shared_ptr<Wake>> make();
  ~Wake();
  Wake(const Wake&) = delete;
  Wake& operator=(const Wake&) = delete;

  int fd() const { return fd_; }
  // Adds to the count (the reader reads it away). Async-signal-safe, no allocation: fit for a
  // CUDA host function, which must not call CUDA.
  void signal() const noexcept;

 private:
  explicit Wake(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace rig::agent
