// The places of the connections still in their handshake (unauthenticated): at most `places`
// at once and at most `per_source` of one source (an IPv4 address, or an IPv6 /64). A newcomer
// always gets a place: when its source holds its share, that source's oldest connection is
// shed; when all places are taken, the oldest of the source that holds the most. So strangers
// that hold every place, or reopen connections as they close, never lock a job out (OpenSSH's
// MaxStartups drops newcomers at random instead), and a flood from one source sheds its own
// connections first. A shed connection is shut down: its thread's next read sees the end and
// the connection ends, refused. Sheds are logged at most once a second, with their count.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include "process/gauges.h"

namespace rig::agent {

class HandshakeRoom {
 public:
  // `gauges.handshakes` follows the places taken.
  HandshakeRoom(std::uint32_t places, std::uint32_t per_source, Gauges& gauges);
  ~HandshakeRoom();
  HandshakeRoom(const HandshakeRoom&) = delete;
  HandshakeRoom& operator=(const HandshakeRoom&) = delete;

  // Takes a place for the connection `fd` from `peer`, shedding another if it must; its ticket
  // for leave(). Keeps a duplicate of fd to shut the connection down with, so that a place
  // left late never touches a descriptor number used again meanwhile. 0 when no duplicate can
  // be made (descriptors exhausted): the connection then holds no place and cannot be shed.
  std::uint64_t enter(int fd, const sockaddr_storage& peer);
  // Gives the place back (the handshake ended); a shed place was given back already.
  void leave(std::uint64_t ticket);
  // Connections shed since the agent started.
  std::uint64_t shed() const;

 private:
  struct Place {
    std::uint64_t ticket;
    int fd;  // the duplicate
    std::string source;
  };
  void shed_oldest_of(const std::string& source);  // mu_ held
  std::string fullest_source() const;               // mu_ held
  void log_sheds();                                  // mu_ held

  const std::uint32_t places_;
  const std::uint32_t per_source_;
  Gauges& gauges_;
  mutable std::mutex mu_;  // the accept thread and the connections' threads; not the hot path
  std::deque<Place> taken_;  // oldest first
  std::uint64_t next_ticket_ = 1;
  std::uint64_t shed_ = 0;
  std::uint64_t shed_unlogged_ = 0;
  std::chrono::steady_clock::time_point last_log_{};
};

// A connection's place, given back once (release) or at the end of its scope.
class HandshakePlace {
 public:
  HandshakePlace(HandshakeRoom& room, std::uint64_t ticket) : room_(&room), ticket_(ticket) {}
  ~HandshakePlace() { release(); }
  HandshakePlace(const HandshakePlace&) = delete;
  HandshakePlace& operator=(const HandshakePlace&) = delete;
  void release() {
    if (room_ != nullptr && ticket_ != 0) room_->leave(ticket_);
    room_ = nullptr;
  }

 private:
  HandshakeRoom* room_;
  std::uint64_t ticket_;
};

// The source a connection's places are counted by, as a key: its IPv4 address (a v4-mapped
// IPv6 one each on its own), or the first 64 bits of its IPv6 address.
std::string handshake_source(const sockaddr_storage& peer);

}  // namespace rig::agent
