// The connections still in their handshake (unauthenticated), driven by the accept thread: no
// such connection holds a thread of its own. At most `places` at once and at most `per_source`
// of one source (an IPv4 address, or an IPv6 /64). A newcomer always gets a place: when its
// source holds its share, that source's oldest connection is shed; when all places are taken,
// the oldest of the source that holds the most. So strangers that hold every place, or reopen
// connections as they close, never lock a job out (OpenSSH's MaxStartups drops newcomers at
// random instead), and a flood from one source sheds its own connections first. A shed
// connection is closed. Sheds, and the handshakes that fail, are logged at most once a second
// with their count (log_limit.h).
//
// Only the accept thread calls it; other threads read gauges.handshakes.
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "job/handshake.h"
#include "process/gauges.h"
#include "process/log_limit.h"

namespace rig::agent {

class HandshakeRoom {
 public:
  // `gauges.handshakes` follows the places taken.
  HandshakeRoom(std::uint32_t places, std::uint32_t per_source, Gauges& gauges);
  HandshakeRoom(const HandshakeRoom&) = delete;
  HandshakeRoom& operator=(const HandshakeRoom&) = delete;

  // Gives `handshake`, from `peer`, a place, shedding another connection if it must.
  void enter(std::unique_ptr<Handshake> handshake, const sockaddr_storage& peer);
  // Appends a pollfd for each connection in the room, in the room's order (for advance).
  void poll_fds(std::vector<pollfd>& fds) const;
  // Milliseconds until the nearest deadline; -1 when the room is empty.
  int timeout_ms() const;
  // After a poll of poll_fds()'s `polled`: advances the connections with events, expires those
  // past their deadline, and hands each that ended (kFailed, kJob or kJoined) to `ended` before
  // it leaves the room.
  using Ended = std::function<void(Handshake&, Handshake::Step)>;
  void advance(std::span<const pollfd> polled, const Ended& ended);
  // Tells every connection in the room `why` (without waiting) and closes it.
  void clear(const std::string& why);

 private:
  struct Place {
    std::unique_ptr<Handshake> handshake;
    std::string source;
  };
  void shed_oldest_of(const std::string& source);
  std::string fullest_source() const;
  // relaxed: a count for the status (gauges.h), ordering nothing.
  void count() { gauges_.handshakes.store(static_cast<std::uint32_t>(taken_.size()), std::memory_order_relaxed); }

  const std::uint32_t places_;
  const std::uint32_t per_source_;
  Gauges& gauges_;
  std::deque<Place> taken_;  // oldest first
  LogLimit shed_log_;
};

// The source a connection's places are counted by, as a key: its IPv4 address (a v4-mapped
// IPv6 one each on its own), or the first 64 bits of its IPv6 address.
std::string handshake_source(const sockaddr_storage& peer);

}  // namespace rig::agent
