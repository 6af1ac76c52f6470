// The driver contract (the page's Rig_edge.Driver) as C++ types: what a device driver offers the
// runtime besides the C functions of rig/edge.h.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "rig/edge.h"

namespace rig::edge {

/// Rig.word: regions hold a buffer's bytes up to a whole word.
inline constexpr std::uint64_t kWord = 4;

/// The page's `Fault why`: the device faulted, the job failed (why = its root cause), or the
/// job's close has begun (why = "the job is closed").
class RIG_API Fault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Kinds of a device's memory (Rig_edge.memory).
enum class Memory : std::uint32_t {
  kDevice = 0,  ///< the device's own memory
  kHost = 1,    ///< host memory the device reaches (none on an agent's simulated device)
};

/// Where a region lies (Rig_edge.location).
struct Location {
  std::optional<std::uint64_t> address;  ///< a proxy's word: the agent's device id
  std::optional<std::uintptr_t> host;    ///< a proxy's word: its address in this process
  std::uint64_t handle = 0;              ///< an agent object: its id; a word: 0
};

enum class Completion { kHost, kDevice };

struct Waits {
  bool hosts = true;                 ///< waits on host words are taken
  std::uint64_t most = UINT64_MAX;   ///< max_int: no limit
};

struct CopyEngine {
  int count = 0;
  std::string queue;
};

/// Rig_edge.facts, for a driver whose regions are R.
template <class R>
struct Facts {
  std::string arch;
  std::uint64_t budget = 0;
  std::vector<std::string> queues;
  std::optional<CopyEngine> copy_engine;
  Completion completion = Completion::kHost;
  Waits waits;
  bool may_block = false;
  std::optional<std::uint64_t> hang_ms;
  bool maps_host = false;
  bool host_addresses = false;
  std::uint64_t cache_bytes = 0;
  R word;
  std::optional<std::string> bus;
};

/// Rig_edge.mapping: None, or the new region.
template <class R>
using Mapping = std::optional<R>;

/// Rig_edge.code: what image answers on success.
template <class R, class I>
struct Loaded {
  I image;
};

/// Rig_edge.entry_answer.
struct Entry {
  std::uint32_t function = 0;  ///< what a words part names
};
struct Absent {};
struct NoMemory {
  std::uint64_t bytes = 0;
};
using EntryAnswer = std::variant<Entry, Absent, NoMemory>;

/// Rig_edge.grown.
struct Grown {};
struct Short {
  std::uint64_t bytes = 0;
};
using GrowAnswer = std::variant<Grown, Short>;

/// Rig_edge.dma: how a PCI function reaches a region. A proxy never answers one.
struct Dma {
  std::string fn;
};

}  // namespace rig::edge
