// One TCP connection of a job: a socket, its send turn and its counters.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "rig/engine/counters.h"
#include "rig/engine/send_turn.h"
#include "rig/engine/socket.h"

namespace rig::engine {

class Connection {
 public:
  Connection(std::unique_ptr<Socket> socket, Counters& counters)
      : socket_(std::move(socket)), counters_(counters) {}

  // Sends one message in order with every other send of any thread. Returns once the kernel has
  // taken all its bytes (0) or the connection failed (-errno). Borrows `iov` until it returns.
  int send(std::span<const iovec> iov) {
    TurnGuard turn(turn_);
    return send_holding_turn(iov);
  }

  // Sends one small message by flat combining: the message is posted, and whichever thread
  // holds the turn first sends every posted message in one system call; the others find
  // theirs sent when their turn comes. Same contract as send(): returns once the kernel took
  // the bytes, or -errno. Borrows `iov` (and what it points to) until it returns.
  int send_combined(std::span<const iovec> iov);

  // For a sequence that must not be interleaved (a handover and the bytes that follow it):
  // take turn() with a TurnGuard, then call this for each piece.
  int send_holding_turn(std::span<const iovec> iov);

  SendTurn& turn() { return turn_; }
  Socket& socket() { return *socket_; }
  Counters& counters() { return counters_; }
  // Every call blocked on the socket returns; later sends fail.
  void shutdown() { socket_->shutdown(); }

 private:
  struct Posted {
    std::span<const iovec> iov;
    Posted* next = nullptr;
    // 1 while posted; then 0 or -errno, stored with release by the sender (pairs with the
    // poster's acquire load); the poster's frame may vanish right after.
    std::atomic<int> result{1};
  };
  // Sends every posted message; caller holds the turn.
  void flush_posted();

  std::unique_ptr<Socket> socket_;
  Counters& counters_;
  SendTurn turn_;
  // Treiber stack of posted messages. Push: release (the Posted is written); the turn holder
  // takes the whole stack with an acquire exchange.
  alignas(64) std::atomic<Posted*> posted_{nullptr};
  std::vector<iovec> combined_iov_;  // only the turn holder touches it (ordered by the turn)
  std::vector<Posted*> batch_;       // likewise
};

}  // namespace rig::engine
