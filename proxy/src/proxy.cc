#include "rig/remote/proxy.h"

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "link_core.h"
#include "proxy_slot.h"
#include "submission.h"
#include "test_hook.h"
#include "rig/wire/codec.h"

namespace rig::remote {

struct ImageRecord {
  Link* link = nullptr;
  std::uint32_t device = 0;
  std::mutex mu;  // cold path: entry/prepare bookkeeping, never held while waiting
  std::map<std::string, edge::EntryAnswer, std::less<>> entries;  // answers kept (Entry, Absent)
  std::set<std::string, std::less<>> started;                     // entries made or prepared
};

namespace {

Region word_region(const Link& link, std::uint32_t device, std::uint64_t* word) {
  Region r;
  r.kind = Region::Kind::kWord;
  r.device = device;
  r.bytes = 8;
  r.word = word;
  r.link = &link;
  return r;
}

}  // namespace

std::unique_ptr<Proxy> Device::make(std::uint64_t* word) const {
  if (word == nullptr ||
      reinterpret_cast<std::uintptr_t>(word) % std::atomic_ref<std::uint64_t>::required_alignment != 0) {
    throw std::invalid_argument("make: the timeline word must be 8-byte aligned");
  }
  if (std::holds_alternative<abi::Host>(capability_) && account_.id != 0) {
    throw std::invalid_argument("make: a Host capability for account " +
                                std::to_string(account_.id) + ", which is not the machine's host");
  }
  if (const auto* dev = std::get_if<abi::Device>(&capability_); dev && dev->id != account_.id) {
    throw std::invalid_argument("make: a Device capability with id " + std::to_string(dev->id) +
                                " for the agent's device " + std::to_string(account_.id));
  }
  // Everything that may throw is done before the proxy is registered.
  LinkCore& link = LinkCore::of(*link_);
  auto proxy = std::make_unique<Proxy>(link, account_, capability_, word);
  proxy->slot_ = &link.register_proxy(account_.id, word);  // the last step that may throw
  return proxy;
}

std::string Device::name() const { return account_.name; }

Link& Proxy::link() const { return link_; }

Proxy::Proxy(LinkCore& link, const Account& account, abi::Capability capability, std::uint64_t* word)
    : job_(link.job().shared_from_this()),
      link_(link),
      account_(account),
      capability_(capability),
      name_(account.name),
      word_(word),
      scratch_(std::make_unique<SubmitScratch>()) {
  scratch_->message.reserve(4096);
  scratch_->copy_bytes.reserve(2);  // a chunk's frame, header and rows end to end: a held send allocates nothing
  why_.reserve(256);
}

Proxy::~Proxy() {
  if (slot_ != nullptr) slot_->handshake.close();  // a new proxy may take the account
}

const void* Proxy::key() {
  static const char kKey = 0;
  return &kKey;
}

Facts Proxy::facts() const {
  Facts f;
  f.arch = account_.arch;
  f.budget = account_.budget;
  f.queues = {"COMPUTE:0", "COPY:0"};
  f.copy_engine = edge::CopyEngine{1, "COPY:0"};
  f.completion = edge::Completion::kHost;
  f.waits = edge::Waits{true, UINT64_MAX};
  f.may_block = true;
  f.hang_ms = std::nullopt;
  f.maps_host = false;
  f.host_addresses = false;
  f.cache_bytes = account_.cache_bytes;
  f.word = word_region(link_, account_.id, word_);
  f.bus = std::nullopt;
  f.capability = capability_;
  return f;
}

std::optional<Region> Proxy::alloc(edge::Memory memory, std::uint64_t bytes) {
  if (bytes == 0 || bytes % edge::kWord != 0) {
    throw std::invalid_argument("alloc: " + std::to_string(bytes) +
                                " bytes is not a positive multiple of 4");
  }
  job_->check();
  wire::Request req{};
  req.kind = static_cast<std::uint16_t>(wire::RequestKind::kAlloc);
  req.device = account_.id;
  req.object = link_.fresh();
  req.arg0 = bytes;
  req.arg1 = static_cast<std::uint64_t>(memory);
  const AgentAnswer a = link_.ask(req, {});
  if (a.status != wire::AnswerStatus::kOk) return std::nullopt;
  Region r;
  r.kind = Region::Kind::kObject;
  r.device = account_.id;
  r.id = req.object;
  r.bytes = bytes;
  r.link = &link_;
  return r;
}

void Proxy::free(const Region& region) {
  if (region.kind == Region::Kind::kWord) return;
  link_.release(region.id, wire::ReleaseKind::kObject);
}

edge::Location Proxy::locate(const Region& region) {
  edge::Location l;
  if (region.kind == Region::Kind::kWord) {
    l.address = region.device;
    l.host = reinterpret_cast<std::uintptr_t>(region.word);
    l.handle = 0;
  } else {
    l.handle = region.id;
  }
  return l;
}

bool Proxy::peer(const Proxy& d, const Proxy& d2) {
  if (&d.link_ != &d2.link_) return false;
  const std::uint32_t a = d.account_.id, b = d2.account_.id;
  if (a == b) return true;
  const Account& larger = a > b ? d.account_ : d2.account_;
  const std::uint32_t smaller = a > b ? b : a;
  return (larger.reaches >> smaller) & 1u;
}

edge::Mapping<Region> Proxy::map_peer(const Proxy& d2, const Region& region) {
  if (&d2.link_ != &link_ || region.link != &link_) return std::nullopt;
  if (region.kind == Region::Kind::kWord) return region;
  job_->check();
  wire::Request req{};
  req.kind = static_cast<std::uint16_t>(wire::RequestKind::kMapPeer);
  req.device = account_.id;
  req.object = link_.fresh();
  req.arg0 = region.id;
  const AgentAnswer a = link_.ask(req, {});
  if (a.status != wire::AnswerStatus::kOk) return std::nullopt;
  Region r = region;
  r.device = account_.id;
  r.id = req.object;
  return r;
}

edge::Mapping<Region> Proxy::map_host(std::uintptr_t, std::uint64_t) { return std::nullopt; }

std::variant<edge::Dma, std::string> Proxy::dma(const Region&, const std::string& fn) {
  return "dma " + fn + ": the memory of proxy " + name_ +
         " is another machine's; its agent describes DMA there";
}

std::variant<edge::Loaded<Region, Image>, std::string> Proxy::image(std::span<const std::byte> binary) {
  if (!is_host()) {
    return "proxy " + name_ + " loads no code: only the machine's host runs rig.program";
  }
  job_->check();
  if (binary.size() > wire::kMaxImage) {
    return "image of " + std::to_string(binary.size()) + " bytes is larger than the maximum (" +
           std::to_string(wire::kMaxImage) + ")";
  }
  if (binary.empty()) return "image: empty binary";
  wire::Request req{};
  req.kind = static_cast<std::uint16_t>(wire::RequestKind::kImage);
  req.device = account_.id;
  req.object = link_.fresh();
  const AgentAnswer a = link_.ask(req, binary);
  if (a.status != wire::AnswerStatus::kOk) return a.text.empty() ? "the agent refused the image" : a.text;
  auto record = std::make_shared<ImageRecord>();
  record->link = &link_;
  record->device = account_.id;
  return edge::Loaded<Region, Image>{Image{req.object, std::move(record)}};
}

edge::EntryAnswer Proxy::entry(const Image& image, const std::string& function) {
  // The job first: once it failed or its close began, entry raises Fault, also for a function
  // whose answer is kept (the page: the calls that ask the agent raise).
  job_->check();
  ImageRecord& rec = *image.record;
  {
    std::lock_guard lock(rec.mu);
    if (auto it = rec.entries.find(function); it != rec.entries.end()) return it->second;
  }
  if (function.empty() || function.size() > wire::kMaxName) return edge::Absent{};
  wire::Request req{};
  req.kind = static_cast<std::uint16_t>(wire::RequestKind::kEntry);
  req.device = account_.id;
  req.object = image.id;
  const AgentAnswer a =
      link_.ask(req, std::as_bytes(std::span<const char>(function.data(), function.size())));
  edge::EntryAnswer answer;
  switch (a.status) {
    case wire::AnswerStatus::kOk: answer = edge::Entry{static_cast<std::uint32_t>(a.value)}; break;
    case wire::AnswerStatus::kNoMemory: return edge::NoMemory{a.value};  // made nothing: not kept
    case wire::AnswerStatus::kInvalid: throw std::invalid_argument(a.text);
    default: answer = edge::Absent{}; break;
  }
  std::lock_guard lock(rec.mu);
  rec.started.insert(function);
  return rec.entries.emplace(function, answer).first->second;
}

void Proxy::prepare(const Image& image, const std::string& function) noexcept {
  if (function.empty() || function.size() > wire::kMaxName || job_->over()) return;
  ImageRecord& rec = *image.record;
  try {
    std::lock_guard lock(rec.mu);
    // std::set::insert has the strong guarantee: if it throws, nothing changed.
    if (!rec.started.insert(function).second) return;  // made or started already
  } catch (...) {
    return;  // a prepare that fails changes nothing and reports nothing
  }
  wire::Request req{};
  req.kind = static_cast<std::uint16_t>(wire::RequestKind::kPrepare);
  req.device = account_.id;
  req.object = image.id;
  link_.tell(req, std::as_bytes(std::span<const char>(function.data(), function.size())));
}

void Proxy::unload(const Image& image) { link_.release(image.id, wire::ReleaseKind::kImage); }

edge::GrowAnswer Proxy::grow() { return edge::Grown{}; }

std::uint64_t Proxy::signaled() const {
  // acquire: pairs with the receiving thread's (or stop's) release store of the word.
  return std::atomic_ref<std::uint64_t>(*word_).load(std::memory_order_acquire);
}

void Proxy::sleep(std::uint64_t seen, std::uint64_t still_ms) {
  using clock = std::chrono::steady_clock;
  // A sleep in progress when the close begins returns at once; one that begins after it waits
  // out its still_ms (rig would only call it again while the word is unmoved).
  const bool closing_before = job_->closing();
  const auto start = clock::now();
  // Saturated: a still_ms past what the clock can hold waits "forever" instead of overflowing.
  const auto most_ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock::time_point::max() - start);
  const auto deadline = still_ms >= static_cast<std::uint64_t>(most_ms.count())
                            ? clock::time_point::max()
                            : start + std::chrono::milliseconds(still_ms);
  // A short poll first (as UCX's busy polling, but yielding the core): a word that moves within
  // about a loopback round trip is seen without the receiving thread's futex wake and this
  // thread's reschedule. Bounded, so a long wait still sleeps.
  const auto spin_until = std::min(deadline, start + std::chrono::microseconds(kSpinUs));
  while (clock::now() < spin_until) {
    // Failure first: the event is consumed, so sleep raises for it whatever the word shows.
    if (job_->failed()) throw edge::Fault(job_->fault_text());
    if (signaled() != seen) return;
    std::this_thread::yield();
  }
  for (;;) {
    const std::uint32_t events = slot_->events.current();
    if (job_->failed()) throw edge::Fault(job_->fault_text());
    if (signaled() != seen) return;
    if (!closing_before && job_->closing()) return;  // the close woke it: no Fault for a close
    const auto now = clock::now();
    if (now >= deadline) return;
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::min<clock::duration>(deadline - now, std::chrono::hours(1)));
    // A wake that comes from here on bumped the count read above: the wait returns at once.
    test_hook::at(test_hook::Point::kSleepChecked, slot_->device);
    slot_->events.wait(events, left.count());
  }
}

bool Proxy::stopped() const { return slot_->handshake.stopped(); }

bool Proxy::word_quiet() const {
  const ProxySlot& s = *slot_;
  // Once stopped, the side that claimed the final write has written it when the receiving
  // thread is out of the handshake and the word reached it.
  const std::uint32_t state = s.handshake.state();
  if ((state & StopHandshake::kStopped) == 0) return false;
  if (link_.receiver_ended()) return true;
  return (state & StopHandshake::kClaimed) != 0 && (state & StopHandshake::kReceiverBusy) == 0 &&
         s.signaled() >= s.final_value.load(std::memory_order_acquire);
}

void Proxy::stop(const std::optional<std::string>&) {
  ProxySlot& s = *slot_;
  // acquire: pairs with submit's release: the last value given to submit, also one whose
  // submit failed before anything was sent (0: none was given, and publishing 0 writes nothing).
  const std::uint64_t last = s.last_submitted.load(std::memory_order_acquire);
  s.final_value.store(last, std::memory_order_release);
  // The handshake with the receiving thread's pop of the last pending copy and its end:
  // whichever of the two comes second writes the final value (stop_handshake.h).
  s.handshake.mark_stopped();
  test_hook::at(test_hook::Point::kStopStored, s.device);
  const bool claimed = (s.copies.drained() || link_.receiver_ended()) && s.handshake.claim();
  // The receiving thread may be in the middle of one done report of this proxy: let it finish
  // (a few instructions; this waits for no work). A report it enters later sees the mark, and
  // the claim if stop made it.
  while (s.handshake.receiver_busy()) {
    test_hook::at(test_hook::Point::kStopWaitsForReceiver, s.device);
    std::this_thread::yield();
  }
  s.values.release_storage();  // from here the receiver skips this proxy's values
  if (claimed) {
    s.publish(last);
    s.copies.release_storage();  // drained, or the receiving thread ended
  }
  *scratch_ = SubmitScratch{};  // submit's scratch: no counted call is in flight
  s.handshake.close();
}

}  // namespace rig::remote
