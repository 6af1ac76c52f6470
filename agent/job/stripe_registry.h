// The jobs of this agent that accept data connections (striping), by token. The accept
// thread attaches a joining connection to its job once proved (job/handshake.h); the job's session takes its stripes once all have
// joined. Cold path only (handshakes, the first striped copy): a mutex guards it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "rig/engine/socket.h"
#include "rig/wire/auth.h"
#include "rig/wire/messages.h"

namespace rig::agent {

class StripeRegistry {
 public:
  // The process's registry.
  static StripeRegistry& instance();

  // A job that accepts up to max_stripes data connections, each proved by the job's key;
  // returns its token (random, not 0).
  std::uint64_t open(std::uint32_t max_stripes, const wire::JobKey& key);
  // Whether `proof` is the join's proof by its job's key against the agent's `nonce` (false
  // also when no job has the join's token).
  bool proved(const wire::Join& join, const wire::Nonce& nonce, const wire::Mac& proof);
  // The job ended: later joins are refused; stripes not taken are closed.
  void close(std::uint64_t token);

  // Attaches `socket` as stripe join.stripe of join.count of the job join.token: checks the
  // join against the job (known token, count within the grant and the same in every join, the
  // stripe not yet joined), then sends the echo on the socket, and only then attaches it (so
  // nothing of the job's can be sent on it before the echo). Returns "" on success (the socket
  // is taken), or why it is refused (the socket is left to the caller).
  std::string attach(const wire::Join& join, std::unique_ptr<engine::Socket>& socket);

  // Moves the job's stripes into `out` (in stripe order) once all of them have joined; false
  // (and nothing moved) until then, or when they were taken already.
  // min_bytes: the client's threshold for striped copies into it.
  bool take(std::uint64_t token, std::vector<std::unique_ptr<engine::Socket>>& out, std::uint64_t& min_bytes);

 private:
  // A job that accepts stripes: its grant, and its stripes as they join.
  struct Entry {
    std::uint32_t max_stripes = 0;
    wire::JobKey key{};
    std::uint16_t count = 0;  // 0 until the first join
    std::uint16_t joined = 0;
    std::uint32_t min_kib = 0;
    bool taken = false;
    std::vector<std::unique_ptr<engine::Socket>> stripes;
    ~Entry() { wire::wipe(key.data(), key.size()); }
  };
  std::mutex mu_;
  std::unordered_map<std::uint64_t, Entry> jobs_;
};

}  // namespace rig::agent
