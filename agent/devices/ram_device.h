// A device whose memory is this machine's RAM: the agent's threads reach every byte, so copies
// are memmoves that are done when they return, and received bytes may land straight in place.
// The machine's host and the simulated devices are both this, with their own facts.
#pragma once

#include <cassert>
#include <memory>
#include <vector>

#include "devices/device.h"

namespace rig::agent {

class RamDevice : public DeviceBackend {
 public:
  // `completion`: kNow reports each value done at once; kLater holds it for the next poll()
  // (the work itself is done at once either way), as an asynchronous device reports.
  RamDevice(const wire::Account& account, Completion completion);

  std::shared_ptr<Memory> allocate(std::uint64_t bytes) override;
  std::shared_ptr<Memory> map_peer(const std::shared_ptr<Memory>& memory) override;
  std::uint64_t budget_left() const override { return budget_->left; }
  // The budget's room, or the agent's host memory limit, or RAM: whichever refused.
  std::string no_room(std::uint64_t bytes) const override;
  // Pins every allocation made from now on while it lives (the host's, while the job has GPUs).
  void set_pinning(std::shared_ptr<HostPinning> pinning) { pinning_ = std::move(pinning); }
  // Counts every allocation made from now on in the agent's host memory (null: not counted).
  void set_host_memory(std::shared_ptr<HostMemoryLimit> host_memory) { host_memory_ = std::move(host_memory); }

  wire::Outcome copy_in(const Place& dst, const std::byte* packed, Shape shape) override;
  wire::Outcome copy_out(std::byte* packed, const Place& src, Shape shape) override;
  wire::Outcome copy(const Place& dst, const Place& src, Shape shape) override;

  Completion finish(std::uint64_t value) override;
  bool idle() const override { return true; }
  wire::Outcome poll(std::vector<std::uint64_t>& done) override;
  void quiesce() override {}  // a memmove is done when it returns
  void arm_wake(const std::shared_ptr<Wake>& wake) override;
  // Another RAM device's finished work is done (its memmoves ran when issued, on this thread),
  // so work issued here after it is ordered after it, reported or not; a GPU's is not. Only a
  // device that reports later waits so: one that reports at once (the host) would have its
  // report held anyway, and the executor holds its handover instead, as it does for a GPU's.
  bool waits_on(const DeviceBackend& other) const override {
    return completion_ == Completion::kLater && dynamic_cast<const RamDevice*>(&other) != nullptr;
  }
  void wait_on(DeviceBackend& other, std::uint64_t) override { assert(waits_on(other)); (void)other; }
  // With kLater: a value's work completes only when arm_wake is asked after its finish (which
  // then signals the wake), as a GPU's work completes in the background while the session waits:
  // the wake's path, tested without a GPU (rig-agent --sim-completion woken).
  void complete_when_armed() { when_armed_ = true; }

 private:
  // The host address of a place's first row in `at`, or -EIO if its memory is not RAM.
  wire::Outcome reach(const Place& p, std::byte*& at) const;

  std::shared_ptr<Budget> budget_;
  std::shared_ptr<HostPinning> pinning_;
  std::shared_ptr<HostMemoryLimit> host_memory_;
  RamMemory::Refused refused_ = RamMemory::Refused::kBudget;  // why the last allocate failed
  Completion completion_;
  std::vector<std::uint64_t> finished_;  // kLater: values finished, not yet polled
  bool when_armed_ = false;
  std::size_t completed_ = 0;  // when_armed_: finished_'s first values, whose work completed
};

// Moves `shape` rows from src (rows src_pitch apart) to dst (dst_pitch apart); overlapping
// rows are moved as memmove does.
void move_rows(std::byte* dst, std::uint64_t dst_pitch, const std::byte* src,
               std::uint64_t src_pitch, Shape shape);

}  // namespace rig::agent
