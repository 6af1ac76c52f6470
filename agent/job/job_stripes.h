// A job's data connections (striping): granted in the handshake, joined by connections that
// the StripeRegistry attaches, and taken by the job's session once all have joined.
#pragma once

#include <cstdint>
#include <memory>

#include "rig/engine/counters.h"
#include "rig/engine/socket.h"
#include "rig/engine/stripe_set.h"
#include "rig/wire/auth.h"

namespace rig::agent {

class JobStripes {
 public:
  // silence_ms: a striped receive in which no stripe brings a byte for this long fails (0: no bound).
  JobStripes(engine::Backend backend, engine::Counters& counters, int silence_ms)
      : backend_(backend), counters_(counters), silence_ms_(silence_ms) {}
  ~JobStripes();
  JobStripes(const JobStripes&) = delete;
  JobStripes& operator=(const JobStripes&) = delete;

  // Opens the job in the registry for up to `max` stripes, joined by proofs of `key`; returns
  // its token.
  std::uint64_t grant(std::uint32_t max, const wire::JobKey& key);
  // Whether stripes were granted at all.
  bool granted() const { return token_ != 0; }
  // Whether every stripe has joined (then set() holds them; checked until they have).
  bool ready();
  // The stripes, which know the client's threshold for striped copies (once ready()).
  engine::StripeSet& set() { return *set_; }
  // Every call blocked on a stripe returns.
  void shutdown();

 private:
  engine::Backend backend_;
  engine::Counters& counters_;
  int silence_ms_;
  std::uint64_t token_ = 0;  // the job's token in the StripeRegistry (0: no striping)
  std::unique_ptr<engine::StripeSet> set_;
};

}  // namespace rig::agent
