#include "devices/wake.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

namespace rig::agent {

Wake::Wake() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd for the job's wake");
}

Wake::~Wake() { ::close(fd_); }

void Wake::signal() const noexcept {
  const std::uint64_t one = 1;
  // EAGAIN only at a count of 2^64 - 2, which the reader's reads keep far from: nothing to do.
  [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof one);
}

}  // namespace rig::agent
