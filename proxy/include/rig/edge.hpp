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

/// The values of the facts' completion (Rig_edge's Host and Device). A proxy declares kHost; its
/// timeline word is written by its link's receiving thread, a thread of this process.
enum class Completion { kHost /**< the page's Host */, kDevice /**< the page's Device */ };

/// The facts' waits: which waits the device takes. A proxy's: hosts, and most UINT64_MAX.
struct Waits {
  bool hosts = true;                 ///< waits on host words are taken
  std::uint64_t most = UINT64_MAX;   ///< the bound on waits; UINT64_MAX, the page's max_int: no limit
};

/// The facts' copy_engine when it is Some: a count and a queue. A proxy's is {1, "COPY:0"}.
struct CopyEngine {
  int count = 0;      ///< the fact's count (a proxy's: 1)
  std::string queue;  ///< the fact's queue, by its name in Facts::queues (a proxy's: "COPY:0")
};

/// Rig_edge.facts, for a driver whose regions are R.
template <class R>
struct Facts {
  /// The device's Rig.arch. A proxy's is its agent account's arch: "sim" for a simulated device,
  /// the machine's name from uname (such as "x86_64") for the host, "sm_XY" for a CUDA GPU.
  std::string arch;
  /// The device's Rig.budget, in bytes. A proxy's is its account's budget when it opened: the
  /// bytes the job may hold on the agent's device.
  std::uint64_t budget = 0;
  /// The names of the device's queues; a part names one by its index (rig_part::queue). A
  /// proxy's: "COMPUTE:0" (RIG_QUEUE_COMPUTE) and "COPY:0" (RIG_QUEUE_COPY).
  std::vector<std::string> queues;
  /// The page's copy_engine fact: std::nullopt (None), or Some count and queue. A proxy's: 1,
  /// "COPY:0".
  std::optional<CopyEngine> copy_engine;
  /// The page's completion fact. A proxy's: kHost.
  Completion completion = Completion::kHost;
  /// Which waits the device takes (Waits). A proxy's: hosts, and most UINT64_MAX.
  Waits waits;
  /// Whether the driver's submit may block the calling thread. A proxy's: true, since its submit
  /// sends its message itself and waits for the peer to take the bytes.
  bool may_block = false;
  /// The device's hang bound, in milliseconds: rig may lose the device for it, and stop's fault
  /// is then Some. std::nullopt: no bound, as for a proxy.
  std::optional<std::uint64_t> hang_ms;
  /// Whether rig may call map_host for the device (it calls it only where maps_host is true). A
  /// proxy's: false (its map_host answers std::nullopt).
  bool maps_host = false;
  /// A proxy's is false: its own memory is another machine's, and its copies name only this
  /// process's memory by host address (rig_side::host).
  bool host_addresses = false;
  /// The device's Rig.cache_bytes: its cache's size in bytes. A proxy's is its account's: a CUDA
  /// GPU's L2, the host's L3 (0 where unknown), 32 MiB for a simulated device.
  std::uint64_t cache_bytes = 0;
  /// The driver's own timeline word, as a region: rig reads it with signaled and gives it back
  /// with free. A proxy's is the word make was given.
  R word;
  /// The page's bus fact, which dma's rules for Bus refer to. A proxy's: std::nullopt (None);
  /// its dma is always an error, since its memory is another machine's.
  std::optional<std::string> bus;
};

/// Rig_edge.mapping: None, or the new region.
template <class R>
using Mapping = std::optional<R>;

/// Rig_edge.code: what image answers on success.
template <class R, class I>
struct Loaded {
  I image;  ///< the loaded code, which rig gives to entry, prepare and unload
};

/// Rig_edge.entry_answer's Entry: what the driver needs to launch the function.
struct Entry {
  std::uint32_t function = 0;  ///< what a words part names: its index in the image (rig_words::function)
};
/// Rig_edge.entry_answer's Absent: the image has no such function (a proxy answers it too when
/// the agent refuses).
struct Absent {};
/// Rig_edge.entry_answer's No_memory: the device has no memory for what the function's launches
/// need, and entry made nothing.
struct NoMemory {
  std::uint64_t bytes = 0;  ///< the bytes the function's launches need (its scratch, on a proxy)
};
/// Rig_edge.entry_answer: what entry answers.
using EntryAnswer = std::variant<Entry, Absent, NoMemory>;

/// Rig_edge.grown's Grown: grow made what the queues need (a proxy's grow makes nothing and
/// always answers it).
struct Grown {};
/// Rig_edge.grown's Short: the device has no memory for the growth; what grow made stays for a
/// later room. A proxy never answers it.
struct Short {
  std::uint64_t bytes = 0;  ///< the bytes the growth takes that the device has no memory for
};
/// Rig_edge.grown: what grow answers.
using GrowAnswer = std::variant<Grown, Short>;

/// Rig_edge.dma: how a PCI function reaches a region. A proxy never answers one.
struct Dma {
  std::string fn;  ///< named as dma's argument fn: a PCI function's bus address, such as "0000:41:00.0"
};

}  // namespace rig::edge
