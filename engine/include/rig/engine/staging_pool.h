// The staging pool of one connection: page-aligned chunk buffers (mimalloc) that strided rows
// are packed into before a send, allocated once and reused by every later send, and registered
// as io_uring fixed buffers of the connection's socket when RLIMIT_MEMLOCK leaves room.
//
// Ordering: only the holder of the connection's send turn packs and sends, so the turn orders
// every use of the chunks and of the registration (the previous holder's pass() is a release,
// the next holder's take() an acquire): no atomics for what the turn orders. Only prepare(),
// which submit calls before it takes the turn, is made safe for any thread.
//
// One chunk is in use at a time: a send returns only once the kernel is done with its bytes
// (after the notification of a zero-copy send), so the holder reuses chunk 0 for every piece.
// More chunks only serve a sender that keeps several sends in flight.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "rig/wire/limits.h"

namespace rig::engine {

class Socket;
struct Counters;

class StagingPool {
 public:
  static constexpr std::size_t kChunkBytes = wire::kChunkBytes;

  struct Chunk {
    std::byte* data = nullptr;
    std::size_t bytes = 0;
    int index = -1;  // its registered (fixed) buffer index with the socket, or -1
  };

  explicit StagingPool(std::size_t chunks = 1, std::size_t chunk_bytes = kChunkBytes)
      : chunks_wanted_(chunks), chunk_bytes_(chunk_bytes) {}
  // Frees the chunks. The socket they were registered with must be gone (its ring unregisters
  // them), which is why a Connection declares its pool before its socket.
  ~StagingPool();
  StagingPool(const StagingPool&) = delete;
  StagingPool& operator=(const StagingPool&) = delete;

  // Any thread, before it takes the turn: makes sure the chunks exist (allocated by the first
  // call that succeeds; cold). Returns 0, or -ENOMEM when they cannot be allocated.
  int prepare(Counters& counters);

  // The turn holder, after prepare() returned 0: chunk `i` (< chunks()). The first call
  // registers the chunks with `socket` as far as RLIMIT_MEMLOCK allows (see registration()).
  Chunk chunk(std::size_t i, Socket& socket, Counters& counters);

  std::size_t chunks() const { return chunks_wanted_; }
  std::size_t chunk_bytes() const { return chunk_bytes_; }
  // The turn holder (or anyone after the sends ended): 1 before the first chunk(); then 0 if
  // every chunk is registered, or -errno why not (-ENOMEM: over the memlock budget; -EOPNOTSUPP:
  // the socket has no fixed buffers). The pool works the same either way.
  int registration() const { return registration_; }

 private:
  void register_with(Socket& socket, Counters& counters);

  const std::size_t chunks_wanted_;
  const std::size_t chunk_bytes_;
  // prepare(): written under mu_ (cold, once); ready_'s release store publishes chunks_ to the
  // acquire load of later prepare() calls, which every user makes before chunk().
  std::mutex mu_;
  std::atomic<bool> ready_{false};
  std::vector<std::byte*> chunks_;
  // Turn-ordered.
  int registration_ = 1;
  std::size_t registered_ = 0;  // chunks [0, registered_) are fixed buffers 0..
};

// Bytes of registered memory this process may pin: RLIMIT_MEMLOCK (SIZE_MAX when unlimited or
// when the process has CAP_IPC_LOCK, which the kernel then does not charge).
std::size_t memlock_limit();

}  // namespace rig::engine
