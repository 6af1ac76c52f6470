// What every backend shares: the default fixed-buffer calls and the zero-copy threshold.
#include "rig/engine/socket.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>

#include "rig/engine/env_settings.h"
#include "rig/engine/tcp.h"

namespace rig::engine {
namespace {

// Set once by a launcher before connections are made; relaxed: a plain configuration value
// read by later calls on threads the launcher started after setting it.
std::atomic<std::size_t> g_zc_default{kSendZcAuto};

}  // namespace

void Socket::set_silence_ms(int ms) {
  set_recv_silence_ms(ms);
  set_send_silence_ms(fd(), ms);
}

int Socket::register_send_buffers(std::span<const iovec>) { return -EOPNOTSUPP; }

int Socket::post_send(std::span<const iovec> iov) {
  posted_rc_ = send_all(iov);
  return 0;
}

int Socket::push_posted() { return 0; }

int Socket::finish_send() {
  const int rc = posted_rc_;
  posted_rc_ = 0;
  return rc;
}

int Socket::send_fixed(std::span<const iovec> head, const void* p, std::size_t n, unsigned) {
  constexpr std::size_t kMaxHead = 4;
  if (head.size() > kMaxHead) return -EINVAL;
  iovec iov[kMaxHead + 1];
  std::size_t k = 0;
  for (const iovec& v : head) iov[k++] = v;
  iov[k++] = {const_cast<void*>(p), n};
  return send_all({iov, k});
}

void set_send_zc_default(std::size_t bytes) { g_zc_default.store(bytes, std::memory_order_relaxed); }

std::size_t resolve_send_zc_bytes(int fd, std::size_t requested) {
  if (requested != kSendZcAuto) return requested;
  const std::size_t preset = g_zc_default.load(std::memory_order_relaxed);
  if (preset != kSendZcAuto) return preset;
  if (const auto bytes = env_settings()->send_zc_bytes) return *bytes;
  constexpr std::size_t kRemoteDefault = std::size_t{1} << 20;  // ENGINE-NOTES: 1 MB is fine
  return peer_is_loopback(fd) ? 0 : kRemoteDefault;
}

}  // namespace rig::engine
