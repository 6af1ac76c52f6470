#include "devices/wake.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

namespace rig::agent {

wire::Result<std::shared_ptr<Wake>> Wake::make() {
  const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return wire::Outcome::failed(-err, std::string("eventfd for the job's wake: ") + std::strerror(err));
  }
  Wake* wake = new (std::nothrow) Wake(fd);
  if (wake == nullptr) {
    ::close(fd);
    return wire::Outcome::failed(-ENOMEM, "no memory for the job's wake");
  }
  return std::shared_ptr<Wake>(wake);  // its own std::bad_alloc deletes the wake, closing fd
}

Wake::~Wake() { ::close(fd_); }

void Wake::signal() const noexcept {
  const std::uint64_t one = 1;
  // EAGAIN only at a count of 2^64 - 2, which the reader's reads keep far from: nothing to do.
  [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof one);
}

}  // namespace rig::agent
