#include "devices/host_memory_limit.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <string_view>

namespace rig::agent {

bool HostMemoryLimit::claim(std::uint64_t bytes) noexcept {
  // relaxed first read: the CAS below checks it. acquire on success: pairs with give_back's
  // release, so a claim that counts on bytes another job gave back comes after their free.
  std::uint64_t held = held_.load(std::memory_order_relaxed);
  do {
    if (bytes > limit_ || held > limit_ - bytes) {
      refusals_.fetch_add(1, std::memory_order_relaxed);  // relaxed: a count, orders nothing
      return false;
    }
  } while (!held_.compare_exchange_weak(held, held + bytes, std::memory_order_acquire, std::memory_order_relaxed));
  return true;
}

void HostMemoryLimit::give_back(std::uint64_t bytes) noexcept {
  // release: pairs with claim's acquire (the free before this happens before the next claim
  // that counts on these bytes).
  held_.fetch_sub(bytes, std::memory_order_release);
}

std::uint64_t HostMemoryLimit::held() const noexcept {
  return held_.load(std::memory_order_relaxed);  // relaxed: a figure for the status, orders nothing
}

std::uint64_t HostMemoryLimit::refusals() const noexcept {
  return refusals_.load(std::memory_order_relaxed);  // relaxed: a count (see claim)
}

std::string HostMemoryLimit::refusal(const std::string& what) const {
  return what + " would pass the agent's limit of " + std::to_string(limit_) +
         " bytes of host memory for all jobs (rig-agent --max-host-bytes; " + std::to_string(held()) + " are held)";
}

namespace {

// The first number in the file at `path` ("max", none or no file: nothing).
std::uint64_t number_in(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text)) return UINT64_MAX;
  std::uint64_t n = 0;
  const auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), n);
  return err == std::errc() && end == text.data() + text.size() ? n : UINT64_MAX;
}

// The lowest memory limit of this process's cgroup, v2 or v1, where it is mounted (the
// cgroup's own folder, or the mount's root, which is the cgroup in a container's namespace).
std::uint64_t cgroup_limit() {
  std::uint64_t lowest = std::min(number_in("/sys/fs/cgroup/memory.max"),
                                  number_in("/sys/fs/cgroup/memory/memory.limit_in_bytes"));
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const std::size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string_view controllers = std::string_view(line).substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (controllers.empty()) lowest = std::min(lowest, number_in("/sys/fs/cgroup" + path + "/memory.max"));
    if (("," + std::string(controllers) + ",").find(",memory,") != std::string::npos) {
      lowest = std::min(lowest, number_in("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes"));
    }
  }
  return lowest;
}

}  // namespace

std::uint64_t usable_machine_memory() noexcept {
  static const std::uint64_t usable = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const std::uint64_t ram = pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
                                                    : std::uint64_t{4} << 30;  // unknown: 4 GiB
    try {
      return std::min(ram, cgroup_limit());
    } catch (...) {  // no memory to read the files with: the RAM
      return ram;
    }
  }();
  return usable;
}

std::uint64_t default_max_host_bytes() noexcept { return usable_machine_memory() / 2; }

}  // namespace rig::agent
