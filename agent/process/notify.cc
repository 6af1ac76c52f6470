#include "process/notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace rig::agent {

wire::Outcome notify_service_manager(const std::string& state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || *path == '\0') return {};
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  const std::size_t n = std::strlen(path);
  if (n >= sizeof sa.sun_path) {
    return wire::Outcome::failed(-EINVAL, std::string("NOTIFY_SOCKET='") + path + "': longer than a unix socket's path");
  }
  std::memcpy(sa.sun_path, path, n);
  if (sa.sun_path[0] == '@') sa.sun_path[0] = '\0';  // the abstract namespace
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    const int err = errno;
    return wire::Outcome::failed(-err, std::string("NOTIFY_SOCKET: socket: ") + std::strerror(err));
  }
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n);
  const ssize_t sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&sa), len);
  const int err = errno;
  ::close(fd);
  if (sent < 0) return wire::Outcome::failed(-err, std::string("NOTIFY_SOCKET='") + path + "': " + std::strerror(err));
  return {};
}

}  // namespace rig::agent
