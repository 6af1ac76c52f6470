// What every figure of rig-bench works on: a proxy of the agent's device 1, two regions on it
// and two host buffers of the same size. Region A holds the host pattern (uploaded and checked
// once); region B is the target of copies to the device; the host scratch buffer is the target
// of copies back.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "costs.h"
#include "rig/harness/runtime.h"
#include "rig/remote/link.h"

namespace rig::bench {

class Fixture {
 public:
  // Makes the proxy of device `device` and allocates two regions of `bytes`. Throws.
  Fixture(remote::Link& link, std::uint32_t device, std::uint64_t bytes);
  ~Fixture();
  Fixture(const Fixture&) = delete;
  Fixture& operator=(const Fixture&) = delete;

  harness::Driven& dev() { return dev_; }
  remote::Link& link() { return link_; }
  // Where each figure's agent-side costs come from (rig_bench.cc sets it before any figure).
  void set_agent_watch(AgentWatch& watch) { agent_watch_ = &watch; }
  AgentWatch& agent_watch() { return *agent_watch_; }
  std::uint64_t bytes() const { return bytes_; }
  const remote::Region& a() const { return a_; }
  const remote::Region& b() const { return b_; }
  // The host copy of region A's bytes.
  const std::byte* pattern() const { return pattern_.get(); }
  std::byte* scratch() { return scratch_.get(); }

  // One copy as its own handover, waited for (untimed helpers).
  void upload(const void* host, const remote::Region& dst, std::uint64_t offset, std::uint64_t n);
  void download(const remote::Region& src, std::uint64_t offset, void* host, std::uint64_t n);

  // Fills B with A's bytes rotated by kRotation (on the agent), so that no byte of B holds what
  // a copy of the pattern would put there: a copy that does not land cannot pass a check.
  void scramble_b();
  static constexpr std::uint64_t kRotation = 8;
  // B[j] after scramble_b(): pattern[(j + kRotation) mod bytes()].
  std::byte scrambled(std::uint64_t j) const { return pattern_[(j + kRotation) % bytes_]; }

 private:
  remote::Link& link_;
  AgentWatch* agent_watch_ = nullptr;
  std::uint64_t bytes_;
  harness::Driven dev_;
  remote::Region a_{}, b_{};
  std::unique_ptr<std::byte[]> pattern_, scratch_;
};

}  // namespace rig::bench
