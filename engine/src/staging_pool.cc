#include "rig/engine/staging_pool.h"

#include <mimalloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <fstream>
#include <string>

#include "rig/engine/counters.h"
#include "rig/engine/socket.h"

namespace rig::engine {
namespace {

bool has_ipc_lock() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      const unsigned long long caps = std::stoull(line.substr(7), nullptr, 16);
      constexpr int kCapIpcLock = 14;
      return (caps >> kCapIpcLock) & 1;
    }
  }
  return false;
}

}  // namespace

std::size_t memlock_limit() {
  if (has_ipc_lock()) return SIZE_MAX;
  rlimit rl{};
  if (::getrlimit(RLIMIT_MEMLOCK, &rl) != 0) return 0;
  return rl.rlim_cur == RLIM_INFINITY ? SIZE_MAX : static_cast<std::size_t>(rl.rlim_cur);
}

StagingPool::~StagingPool() {
  for (std::byte* p : chunks_) mi_free(p);
}

int StagingPool::prepare(Counters& counters) {
  // acquire: pairs with the release store below: chunks_ is complete.
  if (ready_.load(std::memory_order_acquire)) return 0;
  std::lock_guard lock(mu_);
  if (ready_.load(std::memory_order_relaxed)) return 0;  // mu_ orders it
  try {
    chunks_.reserve(chunks_wanted_);
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  while (chunks_.size() < chunks_wanted_) {
    auto* p = static_cast<std::byte*>(mi_malloc_aligned(chunk_bytes_, page));
    if (p == nullptr) return -ENOMEM;  // what was allocated stays for the next attempt
    chunks_.push_back(p);
    bump(counters.staging_chunks_allocated, 1);
  }
  // release: pairs with the acquire load above (in any thread's later prepare()).
  ready_.store(true, std::memory_order_release);
  return 0;
}

void StagingPool::register_with(Socket& socket, Counters& counters) {
  // Registered memory is pinned and charged to RLIMIT_MEMLOCK, which zero-copy sends of
  // unregistered memory use too while in flight: register at most half of it.
  const std::size_t limit = memlock_limit();
  const std::size_t budget = limit == SIZE_MAX ? SIZE_MAX : limit / 2;
  std::size_t n = std::min(chunks_.size(), budget / chunk_bytes_);
  if (n == 0) {
    registration_ = -ENOMEM;
    return;
  }
  std::vector<iovec> iov;
  try {
    for (std::size_t i = 0; i < n; ++i) iov.push_back({chunks_[i], chunk_bytes_});
  } catch (const std::bad_alloc&) {
    registration_ = -ENOMEM;
    return;
  }
  const int rc = socket.register_send_buffers(iov);
  if (rc != 0) {
    registration_ = rc;
    return;
  }
  registered_ = n;
  registration_ = n == chunks_.size() ? 0 : -ENOMEM;
  bump(counters.staging_registered_bytes, n * chunk_bytes_);
}

StagingPool::Chunk StagingPool::chunk(std::size_t i, Socket& socket, Counters& counters) {
  if (registration_ == 1) register_with(socket, counters);
  return Chunk{chunks_[i], chunk_bytes_, i < registered_ ? static_cast<int>(i) : -1};
}

}  // namespace rig::engine
