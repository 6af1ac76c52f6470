// Proxies: devices of this process that stand for devices an agent opened on another machine
// (the page's Rig_remote_proxy). Each driver call becomes a message on the proxy's link.
//
// Every member may be called from several threads at once, except room and submit of one
// proxy, which the runtime calls one at a time. A call that waits for the agent or the link
// holds no lock that another thread needs while it waits.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "rig/edge.h"
#include "rig/edge.hpp"
#include "rig/export.h"
#include "rig/remote/abi.h"
#include "rig/remote/job.h"
#include "rig/remote/link.h"
#include "rig/wire/messages.h"

namespace rig::wire {
template <class M>
struct Framed;
}  // namespace rig::wire

namespace rig::remote {

class LinkCore;
struct ProxySlot;
struct Staging;
struct SubmitPlan;
class Proxy;

/// A region: an agent object named by an id of the job, or a proxy's timeline word.
struct Region {
  enum class Kind : std::uint8_t { kObject, kWord };
  Kind kind = Kind::kObject;
  std::uint32_t device = 0;        ///< the agent's device that holds it / whose word it is
  std::uint64_t id = 0;            ///< the object's id; 0 for a word
  std::uint64_t bytes = 0;
  std::uint64_t* word = nullptr;   ///< a word's address in this process
  const Link* link = nullptr;
};

/// Loaded code: an image object of the machine's host agent.
struct ImageRecord;
struct Image {
  std::uint64_t id = 0;
  std::shared_ptr<ImageRecord> record;
};

/// A proxy's facts: the edge's facts, and the capability they declare (Rig_remote_abi.declare).
struct Facts : edge::Facts<Region> {
  abi::Capability capability;
};

/// The page's `device l a c`: a description of the proxy on l of the agent's device a, whose
/// capability is c. Describing registers nothing and sends nothing.
class RIG_API Device {
 public:
  Device(Link& link, const wire::Account& account, abi::Capability capability)
      : link_(&link), account_(account), capability_(capability) {}

  /// The device's name, as its account gives it.
  std::string name() const;
  const wire::Account& account() const { return account_; }

  /// The page's make ~word: registers the proxy on the link with the 8 bytes at `word` as its
  /// timeline word, and returns it. Sends nothing. Its values start after the value the word
  /// holds. Throws std::invalid_argument for a misaligned word, a Host capability of an account
  /// whose id is not 0, a Device capability whose id is not the account's, and a link that has a
  /// proxy of this device (open, or closed after it handed work over). A make that throws
  /// leaves nothing registered.
  std::unique_ptr<Proxy> make(std::uint64_t* word) const;

 private:
  Link* link_;
  wire::Account account_;
  abi::Capability capability_;
};

inline Device device(Link& link, const wire::Account& account, abi::Capability capability) {
  return Device(link, account, capability);
}

class RIG_API Proxy {
 public:
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  /// The runtime's C functions take this handle (rig/edge.h).
  rig_proxy* c_handle() { return reinterpret_cast<rig_proxy*>(this); }
  static Proxy* from_c(rig_proxy* d) { return reinterpret_cast<Proxy*>(d); }

  // ---- the driver (Rig_edge.Driver) ----
  static const void* key();
  Facts facts() const;
  const std::string& name() const { return name_; }
  std::uint32_t device_id() const { return account_.id; }
  bool is_host() const { return account_.id == 0; }
  Link& link() const;

  // Memory
  std::optional<Region> alloc(edge::Memory memory, std::uint64_t bytes);
  void free(const Region& region);
  static edge::Location locate(const Region& region);
  static bool peer(const Proxy& d, const Proxy& d2);
  edge::Mapping<Region> map_peer(const Proxy& d2, const Region& region);
  edge::Mapping<Region> map_host(std::uintptr_t p, std::uint64_t n);
  std::variant<edge::Dma, std::string> dma(const Region& region, const std::string& fn);

  // Code
  std::variant<edge::Loaded<Region, Image>, std::string> image(std::span<const std::byte> binary);
  edge::EntryAnswer entry(const Image& image, const std::string& function);
  /// Reports nothing, failures included: it never throws, and a failure (no memory to record
  /// the start) leaves everything as it was.
  void prepare(const Image& image, const std::string& function) noexcept;
  void unload(const Image& image);

  // Queues
  edge::GrowAnswer grow();

  // Timeline
  std::uint64_t signaled() const;
  void sleep(std::uint64_t seen, std::uint64_t still_ms);

  // Stopping
  void stop(const std::optional<std::string>& fault);
  const abi::Capability& capability() const { return capability_; }

  /// The C functions (rig/edge.h).
  int room(const rig_submission& s) const;
  int submit(const rig_submission& s, std::uint64_t value, const char** why);
  /// The C functions' exception barrier: an exception that escaped submit becomes RIG_FAILED
  /// with "internal error in submit: " and its text, kept as submit keeps its reasons.
  int fail_internally(const char** why, const char* what) noexcept;
  void commit() {}

  /// RIG_LATER above this many bytes of copies and words submitted and not reported done.
  static constexpr std::uint64_t kRoomBytes = 64ull << 20;
  /// RIG_NEVER for a submission with more copies into this process's memory (of at least one
  /// byte) than this: each is a record the receiving thread keeps until its bytes land, and a
  /// handover takes room for all of its records at once.
  static constexpr std::uint32_t kMaxCopiesIntoHere = 4096;
  /// Payload bytes per kBytes message of a copy from this process's memory.
  static constexpr std::uint64_t kChunkBytes = 4ull << 20;
  /// sleep() polls the word this long before it waits on the futex.
  static constexpr int kSpinUs = 50;

  /// Internal: made by Device::make.
  Proxy(LinkCore& link, const wire::Account& account, abi::Capability capability, std::uint64_t* word);

 private:
  friend class Device;
  int fail_submit(const char** why, std::string text);
  bool wait_word(const std::uint64_t* word, std::uint64_t value, ProxySlot* same_link);
  /// submit's steps (proxy_submit.cc).
  bool wait_here(const rig_submission& s, const SubmitPlan& plan);
  bool encode(const rig_submission& s, std::uint64_t value, const SubmitPlan& plan);
  bool wait_for_records(std::uint32_t n_into);
  bool record(const rig_submission& s, std::uint64_t value, const SubmitPlan& plan);
  bool reserve_posted(const SubmitPlan& plan);
  int send_posted(const rig_submission& s, std::uint64_t value);
  int send_holding(const rig_submission& s, std::uint64_t value, Staging& staging);

  std::shared_ptr<Job> job_;  ///< the job outlives its proxies
  LinkCore& link_;
  const wire::Account account_;
  const abi::Capability capability_;
  const std::string name_;
  std::uint64_t* const word_;
  ProxySlot* slot_ = nullptr;  ///< set by make once registered

  /// Submit's scratch, reused (room and submit run one at a time per proxy).
  using BytesHeader = wire::Framed<wire::Bytes>;
  std::vector<std::byte> message_;
  std::vector<BytesHeader> bytes_headers_;
  std::vector<iovec> iov_;
  std::string why_;
};

}  // namespace rig::remote
