#include "exec/given_up_work.h"

#include <type_traits>

#include "exec/staging.h"

namespace rig::agent {

void GivenUpWork::leave_to(std::uint32_t device, int gpu) noexcept {
  for (PendingHandover& ho : handovers_) {
    for (PendingPart& p : ho.parts) {
      if (pinning_ != nullptr && p.staged) pinning_->leave_to_given_up_gpu(p.staged.get(), gpu);
      for (CopySide* side : {&p.src, &p.dst}) {
        if (side->memory == nullptr) continue;
        if (side->memory->device() == device) {
          side->memory.reset();
        } else {
          side->memory->leave_to_given_up_gpu(gpu);
        }
      }
    }
  }
}

void GivenUpWork::take(std::deque<PendingHandover>& queue, std::deque<PendingHandover>& running) {
  static_assert(std::is_nothrow_move_constructible_v<PendingHandover>);
  handovers_.reserve(handovers_.size() + queue.size() + running.size());  // the only throw
  for (auto* from : {&queue, &running}) {
    for (PendingHandover& ho : *from) handovers_.push_back(std::move(ho));
    from->clear();
  }
}

GivenUpWork::~GivenUpWork() {
  // The staging goes as the pool gives a buffer up: unpinned (unless left to the destroyed
  // context), freed, then given back to the agent's host memory.
  for (PendingHandover& ho : handovers_) {
    for (PendingPart& p : ho.parts) {
      if (!p.staged) continue;
      if (pinning_ != nullptr) pinning_->unpin(p.staged.get());
      p.staged.reset();
      if (host_memory_ != nullptr) host_memory_->give_back(JobStaging::footprint(p.staged_capacity));
    }
  }
}

}  // namespace rig::agent
