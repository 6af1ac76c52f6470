// The agent's objects of one job: device memory (and mappings of it), loaded images.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "rig/program/program.h"

namespace rig::agent {

// What a job may still allocate on one device; returned as memory is freed.
struct Budget {
  std::uint64_t left = 0;
};

// Bytes of a device's memory, in host RAM (simulated devices and the host alike). Freed, and
// given back to the budget, when the last object or pending work that names it lets go.
class Memory {
 public:
  Memory(std::uint64_t bytes, std::shared_ptr<Budget> budget);
  ~Memory();
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  bool ok() const { return data_ != nullptr; }
  std::byte* data() const { return data_; }
  std::uint64_t bytes() const { return bytes_; }

 private:
  std::byte* data_ = nullptr;
  std::uint64_t bytes_ = 0;
  std::shared_ptr<Budget> budget_;
};

struct Object {
  std::uint32_t device = 0;  // the device it is mapped for
  std::shared_ptr<Memory> memory;
};

// An entry made by entry/prepare: the function and its launch's scratch, made once.
struct EntryState {
  std::uint32_t function = 0;
  std::unique_ptr<Memory> scratch;  // may be null for a function with no scratch
};

struct ImageObject {
  std::shared_ptr<const program::Image> image;
  std::map<std::uint32_t, std::shared_ptr<EntryState>> entries;  // by function index
};

}  // namespace rig::agent
