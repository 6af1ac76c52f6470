// The runtime's side, for tests, the demo and benchmarks: drives proxies the way rig does and
// checks rig's preconditions (room before submit, room and submit of one proxy one at a time,
// values strictly increasing, stop with no counted call in flight).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "rig/edge.h"
#include "rig/remote/proxy.h"

namespace rig::harness {

// A submission under construction.
class Work {
 public:
  // Copy `bytes` from this process's memory to a region.
  Work& to_device(const void* host, const remote::Region& dst, std::uint64_t offset, std::uint64_t bytes,
                  std::uint32_t queue = RIG_QUEUE_COPY);
  // Copy `bytes` of a region into this process's memory.
  Work& to_host(const remote::Region& src, std::uint64_t offset, void* host, std::uint64_t bytes,
                std::uint32_t queue = RIG_QUEUE_COPY);
  Work& between(const remote::Region& src, std::uint64_t src_offset, const remote::Region& dst,
                std::uint64_t dst_offset, std::uint64_t bytes, std::uint32_t queue = RIG_QUEUE_COPY);
  // A general copy part.
  Work& copy(const rig_copy& c, std::uint32_t queue = RIG_QUEUE_COPY);
  Work& words(std::uint64_t image, std::uint32_t function, std::vector<std::uint32_t> words,
              std::uint32_t queue = RIG_QUEUE_COMPUTE);
  Work& part(const rig_part& p);
  Work& wait(const std::uint64_t* word, std::uint64_t device, std::uint64_t value);

  // Valid until this Work changes.
  const rig_submission& submission();

 private:
  std::vector<rig_part> parts_;
  std::vector<rig_wait> waits_;
  std::vector<std::unique_ptr<std::vector<std::uint32_t>>> words_;
  rig_submission s_{};
};

rig_side host_side(const void* p);
rig_side region_side(const remote::Region& r, std::uint64_t offset);

// A proxy made and driven as rig would. The word lives on the heap at a stable address.
class Driven {
 public:
  Driven(remote::Link& link, const remote::Account& account, remote::abi::Capability capability,
         std::uint64_t initial_word = 0);
  // Throws std::invalid_argument where the link's agent has no device `device_id`.
  Driven(remote::Link& link, std::uint32_t device_id, std::uint64_t initial_word = 0);
  ~Driven();

  remote::Proxy& proxy() { return *proxy_; }
  remote::Proxy* operator->() { return proxy_.get(); }
  std::uint64_t* word() { return word_.get(); }
  std::uint64_t last_value() const { return next_value_ - 1; }

  struct Submitted {
    int rc = RIG_FAILED;
    std::uint64_t value = 0;
    std::string why;
    bool ok() const { return rc == RIG_COMMITTED; }
  };
  // room until RIG_FITS (sleeping on the word while RIG_LATER), then submit with the next value.
  // Throws std::logic_error for RIG_NEVER.
  Submitted submit(Work& work);
  // submit() that must commit; throws otherwise.
  std::uint64_t run(Work& work);
  // room only.
  int room(Work& work);
  // Sleeps until the word reaches `value`; throws std::runtime_error after `timeout_ms`.
  void wait(std::uint64_t value, std::uint64_t timeout_ms = 60000);
  // Stops the proxy (rig's precondition: no call of it in flight).
  void stop();

 private:
  std::unique_ptr<std::uint64_t> word_;
  std::unique_ptr<remote::Proxy> proxy_;
  std::uint64_t next_value_;
  // Detects room/submit of this proxy running on two threads at once (rig never does that).
  std::atomic<int> in_call_{0};
  bool stopped_ = false;
};

}  // namespace rig::harness
