#include "process/handshake_room.h"

#include <netinet/in.h>

#include <algorithm>
#include <cassert>
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

void HandshakeRoom::enter(std::unique_ptr<Handshake> handshake, const sockaddr_storage& peer) {
  std::string source = handshake_source(peer);
  const auto own = static_cast<std::uint32_t>(
      std::count_if(taken_.begin(), taken_.end(), [&](const Place& p) { return p.source == source; }));
  if (own >= per_source_) {
    shed_oldest_of(source);
  } else if (taken_.size() >= places_) {
    shed_oldest_of(fullest_source());
  }
  taken_.push_back({std::move(handshake), std::move(source)});
  count();
}

void HandshakeRoom::poll_fds(std::vector<pollfd>& fds) const {
  for (const Place& p : taken_) fds.push_back({p.handshake->fd(), POLLIN, 0});
}

int HandshakeRoom::timeout_ms() const {
  int nearest = -1;
  for (const Place& p : taken_) {
    const int left = p.handshake->deadline().left_ms();
    if (nearest < 0 || left < nearest) nearest = left;
  }
  return nearest;
}

void HandshakeRoom::advance(std::span<const pollfd> polled, const Ended& ended) {
  assert(polled.size() <= taken_.size());
  std::deque<Place> staying;
  for (std::size_t i = 0; i < taken_.size(); ++i) {
    Handshake& h = *taken_[i].handshake;
    Handshake::Step step = Handshake::Step::kMore;
    try {  // memory exhausted (a join's socket, say) fails this handshake, not the accept thread
      if (i < polled.size() && polled[i].revents != 0) step = h.advance();
      if (step == Handshake::Step::kMore && h.deadline().left_ms() == 0) step = h.expire();
    } catch (const std::exception& e) {
      step = h.fail(std::string("the agent could not go on with the handshake: ") + e.what(), kAuthFailed);
    }
    if (step == Handshake::Step::kMore) {
      staying.push_back(std::move(taken_[i]));
    } else {
      ended(h, step);
    }
  }
  taken_ = std::move(staying);
  count();
}

void HandshakeRoom::clear(const std::string& why) {
  for (Place& p : taken_) p.handshake->refuse(why);
  taken_.clear();
  count();
}

void HandshakeRoom::shed_oldest_of(const std::string& source) {
  const auto it = std::find_if(taken_.begin(), taken_.end(), [&](const Place& p) { return p.source == source; });
  if (it == taken_.end()) return;
  taken_.erase(it);  // closes the connection
  bump(gauges_.handshakes_shed);
  if (std::uint64_t left_out = 0; shed_log_.allow(left_out)) {
    spdlog::warn("shed {} connection(s) still in their handshake, oldest first, for newcomers: the agent holds at "
                 "most {} in their handshake, {} from one source (rig-agent --max-handshakes, "
                 "--max-handshakes-per-source)",
                 left_out + 1, places_, per_source_);
  }
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

}  // namespace rig::agent
