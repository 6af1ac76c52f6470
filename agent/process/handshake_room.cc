#include "process/handshake_room.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include <spdlog/spdlog.h>

#include "rig/engine/address.h"

namespace rig::agent {

std::string handshake_source(const sockaddr_storage& peer) {
  engine::Address a;
  a.storage = peer;
  if (peer.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in&>(a.storage).sin_port = 0;
  } else if (peer.ss_family == AF_INET6) {
    auto& in6 = reinterpret_cast<sockaddr_in6&>(a.storage);
    in6.sin6_port = 0;
    // The /64; a v4-mapped address stays whole: each IPv4 address is a source of its own.
    if (!IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) std::memset(&in6.sin6_addr.s6_addr[8], 0, 8);
  }
  return engine::to_string(a);
}

HandshakeRoom::HandshakeRoom(std::uint32_t places, std::uint32_t per_source, Gauges& gauges)
    : places_(std::max<std::uint32_t>(places, 1)), per_source_(std::max<std::uint32_t>(per_source, 1)), gauges_(gauges) {}

HandshakeRoom::~HandshakeRoom() {
  for (const Place& p : taken_) ::close(p.fd);
}

std::uint64_t HandshakeRoom::enter(int fd, const sockaddr_storage& peer) {
  const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return 0;
  const std::string source = handshake_source(peer);
  const std::lock_guard lock(mu_);
  const auto own = static_cast<std::uint32_t>(
      std::count_if(taken_.begin(), taken_.end(), [&](const Place& p) { return p.source == source; }));
  if (own >= per_source_) {
    shed_oldest_of(source);
  } else if (taken_.size() >= places_) {
    shed_oldest_of(fullest_source());
  }
  const std::uint64_t ticket = next_ticket_++;
  taken_.push_back({ticket, dup, source});
  gauges_.handshakes.store(static_cast<std::uint32_t>(taken_.size()), std::memory_order_relaxed);  // a count
  log_sheds();
  return ticket;
}

void HandshakeRoom::leave(std::uint64_t ticket) {
  const std::lock_guard lock(mu_);
  const auto it = std::find_if(taken_.begin(), taken_.end(), [&](const Place& p) { return p.ticket == ticket; });
  if (it == taken_.end()) return;  // shed
  ::close(it->fd);
  taken_.erase(it);
  gauges_.handshakes.store(static_cast<std::uint32_t>(taken_.size()), std::memory_order_relaxed);  // a count
}

std::uint64_t HandshakeRoom::shed() const {
  const std::lock_guard lock(mu_);
  return shed_;
}

void HandshakeRoom::shed_oldest_of(const std::string& source) {
  const auto it = std::find_if(taken_.begin(), taken_.end(), [&](const Place& p) { return p.source == source; });
  if (it == taken_.end()) return;
  // Its thread, blocked in a read of the handshake, sees the end of the stream at once.
  ::shutdown(it->fd, SHUT_RDWR);
  ::close(it->fd);
  taken_.erase(it);
  ++shed_;
  ++shed_unlogged_;
  bump(gauges_.handshakes_shed);
}

std::string HandshakeRoom::fullest_source() const {
  std::map<std::string, std::uint32_t> counts;
  std::string fullest;
  std::uint32_t most = 0;
  for (const Place& p : taken_) {  // oldest first: of sources holding as many, the first to hold that many
    const std::uint32_t n = ++counts[p.source];
    if (n > most) most = n, fullest = p.source;
  }
  return fullest;
}

void HandshakeRoom::log_sheds() {
  const auto now = std::chrono::steady_clock::now();
  if (shed_unlogged_ == 0 || now - last_log_ < std::chrono::seconds(1)) return;
  spdlog::warn("shed {} connection(s) still in their handshake, oldest first, for newcomers: the agent holds at "
               "most {} in their handshake, {} from one source (rig-agent --max-handshakes, "
               "--max-handshakes-per-source)",
               shed_unlogged_, places_, per_source_);
  shed_unlogged_ = 0;
  last_log_ = now;
}

}  // namespace rig::agent
