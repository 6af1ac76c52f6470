#include "job/job_stripes.h"

#include <vector>

#include "job/stripe_registry.h"
#include "rig/engine/tcp.h"

namespace rig::agent {

JobStripes::~JobStripes() {
  if (token_ != 0) StripeRegistry::instance().close(token_);
}

std::uint64_t JobStripes::grant(std::uint32_t max, const wire::JobKey& key) {
  token_ = StripeRegistry::instance().open(max, key);
  return token_;
}

bool JobStripes::ready() {
  if (set_) return true;
  if (token_ == 0) return false;
  std::vector<std::unique_ptr<engine::Socket>> sockets;
  std::uint64_t min_bytes = 0;
  if (!StripeRegistry::instance().take(token_, sockets, min_bytes)) return false;
  // The agent's zero-copy threshold (--send-zc-bytes, else off towards loopback) for pieces too.
  set_ = std::make_unique<engine::StripeSet>(
      backend_ == engine::Backend::kUring && engine::uring_available(), counters_,
      engine::resolve_send_zc_bytes(sockets.front()->fd(), engine::kSendZcAuto));
  set_->set_silence_ms(silence_ms_);
  set_->set_min_bytes(min_bytes);  // the client's threshold, for copies to it as for its own
  for (auto& socket : sockets) set_->add(std::move(socket));
  return true;
}

void JobStripes::shutdown() {
  if (set_) set_->shutdown();
}

}  // namespace rig::agent
