// One TCP connection of a job: a socket, its send turn and its counters.
#pragma once

#include <memory>
#include <span>

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

  // For a sequence that must not be interleaved (a handover and the bytes that follow it):
  // take turn() with a TurnGuard, then call this for each piece.
  int send_holding_turn(std::span<const iovec> iov);

  SendTurn& turn() { return turn_; }
  Socket& socket() { return *socket_; }
  Counters& counters() { return counters_; }
  // Every call blocked on the socket returns; later sends fail.
  void shutdown() { socket_->shutdown(); }

 private:
  std::unique_ptr<Socket> socket_;
  Counters& counters_;
  SendTurn turn_;
};

}  // namespace rig::engine
