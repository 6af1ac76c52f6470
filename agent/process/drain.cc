#include "process/drain.h"

#include <sys/socket.h>

#include <algorithm>

namespace rig::agent {

bool Drain::enter(int fd) {
  std::lock_guard lock(mu_);
  // relaxed: begin() sets it under mu_, which orders it here.
  if (draining_.load(std::memory_order_relaxed)) return false;
  fds_.push_back(fd);
  return true;
}

void Drain::leave(int fd) {
  std::lock_guard lock(mu_);
  fds_.erase(std::remove(fds_.begin(), fds_.end(), fd), fds_.end());
}

void Drain::begin(int drain_ms) {
  std::lock_guard lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(drain_ms);
  // relaxed: published by the release store below.
  deadline_ns_.store(deadline.time_since_epoch().count(), std::memory_order_relaxed);
  // release: pairs with draining()'s acquire load.
  draining_.store(true, std::memory_order_release);
  // Each fd stays open while entered (leave() comes before its session closes it, under mu_).
  for (const int fd : fds_) ::shutdown(fd, SHUT_RD);
}

bool Drain::draining() const {
  // acquire: pairs with begin()'s release store (the deadline).
  return draining_.load(std::memory_order_acquire);
}

std::chrono::steady_clock::time_point Drain::deadline() const {
  // relaxed: read after draining() returned true (its acquire orders it).
  return std::chrono::steady_clock::time_point(
      std::chrono::steady_clock::duration(deadline_ns_.load(std::memory_order_relaxed)));
}

}  // namespace rig::agent
