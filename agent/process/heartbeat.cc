#include "process/heartbeat.h"

#include <algorithm>
#include <chrono>

#include "rig/engine/iov_cursor.h"
#include "rig/wire/codec.h"

namespace rig::agent {

Heartbeat::Watch::Watch(Heartbeat& heartbeat, engine::Connection& connection)
    : heartbeat_(heartbeat), connection_(connection) {
  const std::lock_guard lock(heartbeat_.mu_);
  heartbeat_.watches_.push_back(this);
}

Heartbeat::Watch::~Watch() {
  const std::lock_guard lock(heartbeat_.mu_);  // a look pinging this session ends first
  std::erase(heartbeat_.watches_, this);
}

int Heartbeat::look() {
  const std::lock_guard lock(mu_);
  int pings = 0;
  for (Watch* w : watches_) {
    const std::uint64_t seen = w->seen_.load(std::memory_order_relaxed);  // a hint (Watch::mark)
    const bool busy_since_last_look = seen % 2 == 1 && seen == w->last_look_;
    w->last_look_ = seen;
    if (!busy_since_last_look) continue;
    const auto f = wire::encode(wire::Ping{++pings_});
    const iovec iov = engine::to_iov(&f, sizeof f);
    if (w->connection_.send_control({&iov, 1})) ++pings;
  }
  return pings;
}

void Heartbeat::start() {
  const std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!stopping_.wait_for(lock, std::chrono::milliseconds(kPeriodMs), [this] { return stop_; })) {
      lock.unlock();
      look();
      lock.lock();
    }
  });
}

void Heartbeat::stop() {
  {
    const std::lock_guard lock(mu_);
    stop_ = true;
  }
  stopping_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace rig::agent
