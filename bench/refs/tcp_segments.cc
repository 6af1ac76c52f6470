#include "tcp_segments.h"

#include <dirent.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>

namespace rig::bench::refs {

TcpSegments tcp_segments(int fd) {
  TcpSegments s;
  int type = 0, domain = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return s;
  len = sizeof domain;
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || (domain != AF_INET && domain != AF_INET6))
    return s;
  int listening = 0;
  len = sizeof listening;
  if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening) return s;
  tcp_info info{};
  len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return s;
  // A kernel older than 4.6 returns a shorter struct without the counts: not measured.
  if (len < offsetof(tcp_info, tcpi_data_segs_out) + sizeof info.tcpi_data_segs_out) return s;
  s.measured = true;
  s.data_out = info.tcpi_data_segs_out;
  s.data_in = info.tcpi_data_segs_in;
  s.all_in = info.tcpi_segs_in;
  return s;
}

TcpSegments tcp_segments_of_process() {
  TcpSegments sum;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return sum;
  const int own = ::dirfd(dir);
  while (const dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == own) continue;
    sum += tcp_segments(static_cast<int>(fd));
  }
  ::closedir(dir);
  return sum;
}

TcpSegments operator-(const TcpSegments& after, const TcpSegments& before) {
  TcpSegments d;
  d.measured = after.measured && before.measured;
  d.data_out = after.data_out - std::min(after.data_out, before.data_out);
  d.data_in = after.data_in - std::min(after.data_in, before.data_in);
  d.all_in = after.all_in - std::min(after.all_in, before.all_in);
  return d;
}

}  // namespace rig::bench::refs
