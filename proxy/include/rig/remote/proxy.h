// Proxies: devices of this process that stand for devices an agent opened on another machine
// (the page's Rig_remote_proxy). Each driver call becomes a message on the proxy's link.
//
// Every member may be called from several threads at once, except room and submit of one
// proxy, which the runtime calls one at a time. A call that waits for the agent or the link
// holds no lock that another thread needs while it waits.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>

#include "rig/edge.h"
#include "rig/edge.hpp"
#include "rig/export.h"
#include "rig/remote/abi.h"
#include "rig/remote/job.h"
#include "rig/remote/link.h"

namespace rig::remote {

class LinkCore;
struct ProxySlot;
struct Staging;
struct SubmitPlan;
struct SubmitScratch;
class Proxy;

/// A region: an agent object named by an id of the job, or a proxy's timeline word.
struct Region {
  /// What the region names.
  enum class Kind : std::uint8_t {
    kObject,  ///< memory of an agent's device: an object of the job, named by its id
    kWord,    ///< a proxy's timeline word in this process's memory
  };
  Kind kind = Kind::kObject;  ///< an object or a word
  std::uint32_t device = 0;        ///< the agent's device that holds it / whose word it is
  std::uint64_t id = 0;            ///< the object's id; 0 for a word
  std::uint64_t bytes = 0;         ///< its size: alloc's n, or 8 for a word
  std::uint64_t* word = nullptr;   ///< a word's address in this process
  const Link* link = nullptr;      ///< the link whose job made it (map_peer is None across links)
};

/// Loaded code: an image object of the machine's host agent.
struct ImageRecord;
/// Loaded code (the page's image): the host agent's image object, and the entries asked of it.
struct Image {
  std::uint64_t id = 0;                  ///< the image object's id of the job
  std::shared_ptr<ImageRecord> record;   ///< the entries made and prepared so far (opaque)
};

/// A proxy's facts: the edge's facts, and the capability they declare (Rig_remote_abi.declare).
struct Facts : edge::Facts<Region> {
  abi::Capability capability;  ///< Host or Device: what the proxy declares it runs
};

/// The page's `device l a c`: a description of the proxy on l of the agent's device a, whose
/// capability is c. Describing registers nothing and sends nothing.
class RIG_API Device {
 public:
  /// Describes the proxy of `link` for the agent's device of `account`, with `capability`.
  Device(Link& link, const Account& account, abi::Capability capability)
      : link_(&link), account_(account), capability_(capability) {}

  /// The device's name, as its account gives it.
  std::string name() const;
  /// The account the agent gave for the device (its id, budget, cache bytes, peers, arch).
  const Account& account() const { return account_; }

  /// The page's make ~word: registers the proxy on the link with the 8 bytes at `word` as its
  /// timeline word, and returns it. Sends nothing. Its values start after the value the word
  /// holds. Throws std::invalid_argument for a misaligned word, a Host capability of an account
  /// whose id is not 0, a Device capability whose id is not the account's, and a link that has a
  /// proxy of this device (open, or closed after it handed work over). A make that throws
  /// leaves nothing registered.
  std::unique_ptr<Proxy> make(std::uint64_t* word) const;

 private:
  Link* link_;
  Account account_;
  abi::Capability capability_;
};

inline Device device(Link& link, const Account& account, abi::Capability capability) {
  return Device(link, account, capability);
}

/// A proxy (the page's Rig_remote_proxy driver): a device of this process that stands for a
/// device the agent opened. Every call may come from several threads at once, except room and
/// submit of one proxy, which come one at a time (the runtime's rule). Calls that ask the agent
/// raise edge::Fault once the job has failed or its close began (docs/SEMANTICS.md).
class RIG_API Proxy {
 public:
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  /// The runtime's C functions take this handle (rig/edge.h).
  rig_proxy* c_handle() { return reinterpret_cast<rig_proxy*>(this); }
  /// The proxy behind a handle c_handle gave.
  static Proxy* from_c(rig_proxy* d) { return reinterpret_cast<Proxy*>(d); }

  // ---- the driver (Rig_edge.Driver) ----
  /// Identifies the driver: rig asks map_peer only of two devices with the same key.
  static const void* key();
  /// The page's facts table for this proxy: arch and cache bytes from the account, the budget,
  /// one copy queue, the waits, the word as a region of its own (docs/SEMANTICS.md).
  Facts facts() const;
  /// The device's name, as its account gives it ("sim1", "host").
  const std::string& name() const { return name_; }
  /// The agent's id of the device (0: the machine's host).
  std::uint32_t device_id() const { return account_.id; }
  /// Whether the proxy stands for the machine's host (device id 0), which also runs words.
  bool is_host() const { return account_.id == 0; }
  /// The link the proxy sends on.
  Link& link() const;

  // Memory
  /// Asks the agent for `bytes` bytes of `memory` on the device: the region, or nullopt if the
  /// agent lacks the room or refuses. Throws std::invalid_argument unless `bytes` is a positive
  /// multiple of 4 (the page's precondition), edge::Fault once the job is over.
  std::optional<Region> alloc(edge::Memory memory, std::uint64_t bytes);
  /// Sends the release of the region's object after every message sent before it; the agent
  /// releases it once the work submitted before no longer needs it. Nothing for a word, and
  /// nothing once the job has failed.
  void free(const Region& region);
  /// Where a region lies: an object's id as its handle; a word's device id as its address and
  /// its host address as its host.
  static edge::Location locate(const Region& region);
  /// Whether d and d2 are proxies of one link and the agent's device of d reaches the memory of
  /// d2's (from the accounts the agent gave at the handshake).
  static bool peer(const Proxy& d, const Proxy& d2);
  /// Maps `region` (memory of d2) for this proxy's device: a word maps as itself; memory is a
  /// new object the agent maps, or None if it cannot or refuses, or the proxies are of two
  /// links. Throws edge::Fault if it asks and the job is over.
  edge::Mapping<Region> map_peer(const Proxy& d2, const Region& region);
  /// Always None: this process's memory is not the agent's device's to map.
  edge::Mapping<Region> map_host(std::uintptr_t p, std::uint64_t n);
  /// Always an error naming the reason: the memory is another machine's.
  std::variant<edge::Dma, std::string> dma(const Region& region, const std::string& fn);

  // Code
  /// Loads `binary` (rig.program code) on the agent's host if this proxy is the machine's
  /// host: the image, or the reason it is refused (empty, larger than the wire's maximum, or
  /// the agent's reason). On any other proxy, an error saying it loads no code. On the host it
  /// throws edge::Fault once the job is over, before any other check.
  std::variant<edge::Loaded<Region, Image>, std::string> image(std::span<const std::byte> binary);
  /// The agent's answer for `function` of the image: an entry or Absent (asked once, then
  /// kept), or NoMemory with the bytes its launches need (kept not: asked again next time).
  /// Throws edge::Fault once the job is over, std::invalid_argument when the agent calls the
  /// request invalid.
  edge::EntryAnswer entry(const Image& image, const std::string& function);
  /// Reports nothing, failures included: it never throws, and a failure (no memory to record
  /// the start) leaves everything as it was.
  void prepare(const Image& image, const std::string& function) noexcept;
  /// Sends the release of the image after every message sent before it; nothing once the job
  /// has failed.
  void unload(const Image& image);

  // Queues
  /// Always Grown: room never answers RIG_GROW.
  edge::GrowAnswer grow();

  // Timeline
  /// The value in the proxy's timeline word, read with acquire order: the bytes of every copy
  /// into this process's memory of that value and earlier have landed. Never blocks.
  std::uint64_t signaled() const;
  /// Returns once the word differs from `seen` (at once if it does already), after `still_ms`
  /// milliseconds, or when the job's close begins; throws edge::Fault once the job has failed.
  /// After a Fault, bytes of a pending copy into this process's memory may still land: its
  /// destination is the caller's again once stop's last value shows in the word.
  void sleep(std::uint64_t seen, std::uint64_t still_ms);

  // Stopping
  /// Stops the proxy without waiting for its work: writes the last value given to submit into
  /// the word once no byte of a copy into this process's memory may still land, frees the
  /// proxy's queues, and ignores `fault`. Regions and images stay until freed.
  void stop(const std::optional<std::string>& fault);
  /// The capability the proxy was described with.
  const abi::Capability& capability() const { return capability_; }
  /// Whether stop was called.
  bool stopped() const;
  /// Whether nothing of the proxy writes its word any more: it was stopped and the word holds
  /// the last value (or the link's receiving thread ended), so the word's memory may be freed.
  bool word_quiet() const;

  /// The C functions (rig/edge.h): RIG_FITS, RIG_LATER while more than 64 MiB (the protocol's
  /// room, rig/wire/limits.h) of this proxy's copies and words are submitted and not done, or
  /// RIG_NEVER for a submission it cannot run (docs/SEMANTICS.md lists each case).
  int room(const rig_submission& s) const;
  /// Sends the handover of `s` as the proxy's `value` and returns once its message is sent:
  /// RIG_COMMITTED, or RIG_FAILED with `*why` set to the reason (valid until its next submit).
  int submit(const rig_submission& s, std::uint64_t value, const char** why);
  /// The C functions' exception barrier: an exception that escaped submit becomes RIG_FAILED
  /// with "internal error in submit: " and its text, kept as submit keeps its reasons.
  int fail_internally(const char** why, const char* what) noexcept;
  /// Does nothing: each submit sent its own message.
  void commit() {}

  /// RIG_NEVER for a submission with more copies into this process's memory (of at least one
  /// byte) than this: each is a record the receiving thread keeps until its bytes land, and a
  /// handover takes room for all of its records at once.
  static constexpr std::uint32_t kMaxCopiesIntoHere = 4096;
  /// sleep() polls the word this long before it waits on the futex.
  static constexpr int kSpinUs = 50;

  /// Internal: made by Device::make.
  Proxy(LinkCore& link, const Account& account, abi::Capability capability, std::uint64_t* word);

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
  const Account account_;
  const abi::Capability capability_;
  const std::string name_;
  std::uint64_t* const word_;
  ProxySlot* slot_ = nullptr;  ///< set by make once registered

  /// Submit's scratch, reused (room and submit run one at a time per proxy).
  std::unique_ptr<SubmitScratch> scratch_;
  std::string why_;
};

}  // namespace rig::remote
