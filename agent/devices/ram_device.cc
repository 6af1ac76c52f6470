#include "devices/ram_device.h"

#include <cstring>

namespace rig::agent {

void move_rows(std::byte* dst, std::uint64_t dst_pitch, const std::byte* src,
               std::uint64_t src_pitch, Shape shape) {
  if (shape.rows == 1 || (src_pitch == shape.row_bytes && dst_pitch == shape.row_bytes)) {
    std::memmove(dst, src, shape.rows * shape.row_bytes);
    return;
  }
  for (std::uint64_t r = 0; r < shape.rows; ++r) {
    std::memmove(dst + r * dst_pitch, src + r * src_pitch, shape.row_bytes);
  }
}

RamDevice::RamDevice(const wire::Account& account, Completion completion)
    : DeviceBackend(account), budget_(std::make_shared<Budget>(Budget{account.budget})), completion_(completion) {}

std::shared_ptr<Memory> RamDevice::allocate(std::uint64_t bytes) {
  return RamMemory::allocate(id(), bytes, budget_, pinning_, host_memory_, refused_);
}

std::string RamDevice::no_room(std::uint64_t bytes) const {
  switch (refused_) {
    case RamMemory::Refused::kBudget: return DeviceBackend::no_room(bytes);
    case RamMemory::Refused::kHostMemory:
      return host_memory_->refusal("an object of " + std::to_string(bytes) + " bytes");
    case RamMemory::Refused::kMemory: break;
  }
  return "the agent's host is out of memory for " + std::to_string(bytes) + " bytes";
}

std::shared_ptr<Memory> RamDevice::map_peer(const std::shared_ptr<Memory>& memory) {
  // RAM is RAM: the mapping is the memory itself, which lives as long as any object names it.
  return memory->host() != nullptr ? memory : nullptr;
}

wire::Outcome RamDevice::reach(const Place& p, std::byte*& at) const {
  at = p.memory->host();
  if (at != nullptr) {
    at += p.offset;
    return {};
  }
  return device_error("device " + std::to_string(id()) + " (" + std::string(wire::fixed_string(account().name)) +
                      ") cannot reach memory of device " + std::to_string(p.memory->device()));
}

wire::Outcome RamDevice::copy_in(const Place& dst, const std::byte* packed, Shape shape) {
  std::byte* d = nullptr;
  RIG_RETURN_IF_FAILED(reach(dst, d));
  move_rows(d, dst.pitch, packed, shape.row_bytes, shape);
  return {};
}

wire::Outcome RamDevice::copy_out(std::byte* packed, const Place& src, Shape shape) {
  std::byte* s = nullptr;
  RIG_RETURN_IF_FAILED(reach(src, s));
  move_rows(packed, shape.row_bytes, s, src.pitch, shape);
  return {};
}

wire::Outcome RamDevice::copy(const Place& dst, const Place& src, Shape shape) {
  std::byte* d = nullptr;
  std::byte* s = nullptr;
  RIG_RETURN_IF_FAILED(reach(dst, d));
  RIG_RETURN_IF_FAILED(reach(src, s));
  move_rows(d, dst.pitch, s, src.pitch, shape);
  return {};
}

Completion RamDevice::finish(std::uint64_t value) {
  if (completion_ == Completion::kDone) return Completion::kDone;
  finished_.push_back(value);
  return Completion::kLater;
}

wire::Outcome RamDevice::poll(std::vector<std::uint64_t>& done) {
  const std::size_t n = when_armed_ ? completed_ : finished_.size();
  done.insert(done.end(), finished_.begin(), finished_.begin() + static_cast<std::ptrdiff_t>(n));
  finished_.erase(finished_.begin(), finished_.begin() + static_cast<std::ptrdiff_t>(n));
  completed_ = 0;
  return {};
}

void RamDevice::arm_wake(const std::shared_ptr<Wake>& wake) {
  if (!when_armed_ || completed_ == finished_.size()) return;
  completed_ = finished_.size();
  wake->signal();
}

}  // namespace rig::agent
