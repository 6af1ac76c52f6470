// One TCP connection of a job: a socket, its send turn and its counters.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "rig/engine/counters.h"
#include "rig/engine/futex.h"
#include "rig/engine/send_turn.h"
#include "rig/engine/socket.h"
#include "rig/engine/staging_pool.h"

namespace rig::engine {

class Connection {
 public:
  Connection(std::unique_ptr<Socket> socket, Counters& counters)
      : socket_(std::move(socket)), counters_(counters) {}

  // Sends one message in order with every other send of any thread. Returns once the kernel has
  // taken all its bytes (0) or the connection failed (-errno). Borrows `iov` until it returns.
  int send(std::span<const iovec> iov) {
    Hold hold(*this);
    return send_holding_turn(iov);
  }

  // Posts one message to leave with the calling thread's next receive on this connection's
  // socket, in the same call into the kernel (Socket::post_send). Takes the send turn and holds
  // it until finish_send(), which the poster must call before any other send of its own (the
  // turn is not reentrant) and before another thread can send. Borrows `iov` and its memory
  // until finish_send() returns. Returns 0 or -errno (then nothing is posted).
  int post_send(std::span<const iovec> iov);
  // Ends the posted send: 0 once the kernel took every byte, or -errno. 0 if none is posted.
  int finish_send();

  // Sends one small message by flat combining: the message is posted, and whichever thread
  // holds the turn sends every posted message in one system call. The poster does not queue
  // for the turn (a FIFO hand-off to a descheduled thread stalls everyone on a busy box): it
  // takes the turn only if it is free, and otherwise waits for a holder to send its message.
  // Same contract as send(): returns once the kernel took the bytes, or -errno. Borrows `iov`
  // (and what it points to) until it returns. A poster whose message another thread sends
  // looks at its state for up to kCombineSpinUs before it sleeps on its futex: a holder's send
  // on a fast link ends within that, and the poster then makes no system call at all (the
  // futex wait and the holder's wake were two per message from four threads: bench/RESULTS.md).
  int send_combined(std::span<const iovec> iov);
  static constexpr int kCombineSpinUs = 20;

  // Sends one small control frame (a ping, a close) from a thread that must not wait for the
  // turn: only if the turn is free, and only what the kernel takes now (the rest of a frame it
  // took a part of follows at once, so that no half frame is left on the stream). True if it
  // went; false if a sender holds the turn (that sender's frames are signs of life enough) or
  // the socket took nothing.
  bool send_control(std::span<const iovec> iov);

  // Holds the turn for a sequence that must not be interleaved (a handover and the bytes that
  // follow it): send each piece with send_holding_turn. Releasing sends what was posted
  // meanwhile.
  class Hold {
   public:
    explicit Hold(Connection& c) : c_(c) { c_.turn_.take(); }
    ~Hold() { c_.release(); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    Connection& c_;
  };
  // Takes the turn only if nobody holds or awaits it; then the caller must release().
  bool try_hold() { return turn_.try_take(); }
  // Passes the turn on, then sends what was posted while it was held (if the turn is free).
  void release();

  int send_holding_turn(std::span<const iovec> iov);

  // The staging pool for bytes that must be packed before they are sent (strided rows). Call
  // staging().prepare() before taking the turn; its chunks belong to the turn holder.
  StagingPool& staging() { return staging_; }
  // Holding the turn: sends `head`, then the first `n` bytes of `chunk` (of staging()), as one
  // message: from the registered buffer (zero-copy at or above the socket's threshold) when the
  // chunk is registered, else like send_holding_turn. Borrows both until it returns.
  int send_staged(std::span<const iovec> head, const StagingPool::Chunk& chunk, std::size_t n);

  Socket& socket() { return *socket_; }
  Counters& counters() { return counters_; }
  // Every call blocked on the socket returns; later sends fail.
  void shutdown() { socket_->shutdown(); }

 private:
  struct Posted {
    std::span<const iovec> iov;
    Posted* next = nullptr;
    // kPending while posted, kSleeping once the poster waits on its futex; then kSent or
    // kFailed + errno, exchanged in with release by the sender (pairs with the poster's acquire
    // loads), which wakes the poster's futex only if the exchange took kSleeping; the poster's
    // frame may vanish right after the exchange.
    std::atomic<std::uint32_t> state{kPending};
  };
  static constexpr std::uint32_t kPending = 0, kSleeping = 1, kSent = 2, kFailed = 3;
  // Sends every posted message; caller holds the turn.
  void flush_posted();
  // Counts a send's result (the turn holder) and returns it.
  int counted(int rc, std::size_t bytes, std::size_t messages);

  // Declared before the socket, so destroyed after it: the socket's ring unregisters the chunks.
  StagingPool staging_;
  std::unique_ptr<Socket> socket_;
  Counters& counters_;
  SendTurn turn_;
  // Treiber stack of posted messages. Push: seq_cst (the Posted is written, and the push is one
  // side of the store-buffering pair with release(): send_combined says why); the turn holder
  // takes the whole stack with an acquire exchange.
  alignas(64) std::atomic<Posted*> posted_{nullptr};
  std::vector<iovec> combined_iov_;  // only the turn holder touches it (ordered by the turn)
  std::vector<Posted*> batch_;       // likewise
  bool send_posted_ = false;         // likewise: a post_send() awaits finish_send()
  std::size_t posted_bytes_ = 0;     // likewise
};

}  // namespace rig::engine
