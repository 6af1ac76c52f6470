#include "link_core.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <stdexcept>
#include <system_error>

#include "link_handshake.h"
#include "pending_request.h"
#include "proxy_slot.h"
#include "rig/engine/iov_cursor.h"
#include "rig/edge.hpp"
#include "rig/engine/connection.h"
#include "rig/engine/env_settings.h"
#include "rig/engine/faulty_socket.h"
#include "rig/engine/frame_reader.h"
#include "rig/engine/futex.h"
#include "rig/engine/stripe_set.h"
#include "rig/engine/tcp.h"
#include "rig/remote/job.h"
#include "test_hook.h"
#include "rig/wire/codec.h"

namespace rig::remote {
namespace {

// The stripes a link asks for: the option, or for kAuto none on loopback and the default
// elsewhere, unless RIG_STRIPES says.
int wanted_stripes(const LinkOptions& options, int fd) {
  int n = options.stripes;
  if (n == LinkOptions::kAuto) {
    n = engine::env_settings()->stripes.value_or(engine::peer_is_loopback(fd) ? 0 : LinkOptions::kDefaultStripes);
  }
  return std::clamp(n, 0, static_cast<int>(wire::kMaxStripes));
}

static_assert(LinkOptions::kSendZcAuto == engine::kSendZcAuto);

engine::Backend engine_backend(Backend b) {
  switch (b) {
    case Backend::kUring: return engine::Backend::kUring;
    case Backend::kPlain: return engine::Backend::kPlain;
    case Backend::kDefault: break;
  }
  return engine::default_backend();
}

Account account_of(const wire::Account& a) {
  // The codec let only kHost and kDevice through (wire::AccountKind, the same values).
  return Account{.id = a.id,
                 .kind = static_cast<Account::Kind>(a.kind),
                 .budget = a.budget,
                 .cache_bytes = a.cache_bytes,
                 .reaches = a.reaches,
                 .name = std::string(wire::fixed_string(a.name)),
                 .arch = std::string(wire::fixed_string(a.arch))};
}

}  // namespace

std::unique_ptr<engine::Socket> LinkCore::make_socket(int fd, const LinkOptions& options) {
  std::unique_ptr<engine::Socket> socket =
      engine::make_socket(fd, backend_, {options.send_zc_bytes, &counters_});
  // Inside a frame too, an agent silent for silence_ms fails the job (the idle watch covers the
  // gaps between frames).
  socket->set_silence_ms(options.silence_ms);
  if (faults_) socket = std::make_unique<engine::FaultySocket>(std::move(socket), *faults_);
  return socket;
}

Link::Link(Job& job, std::string endpoint, const StagingAllocator& staging)
    : job_(job), tag_(take_link_tag()), endpoint_(std::move(endpoint)), staging_(staging) {}

// The tag goes back here, also when LinkCore's constructor throws (the base was made).
Link::~Link() { give_link_tag(static_cast<std::uint16_t>(tag_)); }

LinkCore::LinkCore(Job& job, std::string endpoint, const LinkOptions& options,
                   std::shared_ptr<const engine::Faults> faults)
    : Link(job, std::move(endpoint), options.staging),
      faults_(std::move(faults)),
      backend_(engine_backend(options.backend)) {
  int fd = -1;
  try {
    // The stripes go where this connection went (`reached`), not to a new resolution.
    engine::Address reached;
    fd = connect_to(endpoint_, reached);
    address_ = engine::to_string(reached);
    const int stripes = wanted_stripes(options, fd);
    const std::uint32_t offer = wire::kFeaturePrograms | wire::kFeatureStatus |
                                (stripes > 0 ? std::uint32_t{wire::kFeatureStripes} : 0u);
    const std::optional<engine::Secret> secret = secret_of(options.secret_file);
    Greeting greeting;
    // The C++ API's edge: a failed handshake is thrown here, its reason naming the agent.
    if (const wire::Outcome o = greet(fd, offer, secret, endpoint_, reached, greeting, options.agent_name); !o.ok()) {
      throw std::runtime_error(o.why());
    }
    agent_name_ = greeting.agent_name;
    for (const wire::Account& a : greeting.accounts) accounts_.push_back(account_of(a));
    features_ = greeting.features;
    if (greeting.grant) join_stripes(reached, *greeting.grant, greeting.key, stripes, options, fd);
  } catch (...) {
    stripes_.reset();
    if (fd >= 0) ::close(fd);
    throw;
  }
  connection_ = std::make_unique<engine::Connection>(make_socket(fd, options), counters_);
  reader_ = std::make_unique<engine::FrameReader>(connection_->socket(), counters_);
  reader_->set_exact_probe([this] { return large_copy_expected(); });
  reader_->set_spin_us(options.poll_us == LinkOptions::kAuto ? engine::default_poll_us() : options.poll_us);
  // No done report waits behind a read: the run the reader has decoded is published first.
  reader_->set_before_read([this] {
    publish_pending_done();
    return 0;
  });
  silence_ms_ = options.silence_ms;
  if (options.keepalive_ms > 0) {
    reader_->set_idle_watch(options.keepalive_ms, [this](std::int64_t silent) { return on_idle(silent); });
  }
}

void LinkCore::join_stripes(const engine::Address& reached, const wire::StripeGrant& grant, const wire::JobKey& key,
                        int wanted, const LinkOptions& options, int job_fd) {
  const auto count = static_cast<std::uint16_t>(std::min<std::uint32_t>(wanted, grant.max_stripes));
  // The threshold in KiB (rounded up) governs both directions: the agent learns it in the joins.
  const auto min_kib = static_cast<std::uint32_t>(
      std::clamp<std::uint64_t>((options.stripe_min_bytes + 1023) / 1024, 1, UINT32_MAX));
  stripes_ = std::make_unique<engine::StripeSet>(
      backend_ == engine::Backend::kUring && !faults_ && engine::uring_available(),
      counters_, engine::resolve_send_zc_bytes(job_fd, options.send_zc_bytes));
  stripes_->set_min_bytes(std::uint64_t{min_kib} * 1024);
  // The receiving thread is inside a striped receive, where the idle watch cannot run: the
  // same silence bound applies there.
  stripes_->set_silence_ms(options.silence_ms);
  for (std::uint16_t i = 0; i < count; ++i) {
    const wire::Result<int> connected = engine::tcp_connect(reached);
    if (!connected.ok()) throw_system_error(connected.outcome());
    const int fd = *connected;
    engine::Address peer;
    stripe_addresses_.push_back(engine::peer_address(fd, peer) ? engine::to_string(peer) : std::string("?"));
    stripes_->add(make_socket(fd, options));  // owns the fd from here on
    const wire::Join j{wire::kMagic, wire::kVersion, i, count, 0, min_kib, grant.token};
    if (const wire::Outcome o = remote::join(fd, j, key, "stripe " + std::to_string(i), endpoint_); !o.ok()) {
      throw std::runtime_error(o.why());
    }
  }
}

int LinkCore::on_idle(std::int64_t silent_ms) {
  if (silence_ms_ > 0 && silent_ms >= silence_ms_) {
    idle_why_ = "the agent sent nothing for " + std::to_string(silent_ms) + " ms";
    return -ETIMEDOUT;
  }
  // Ping only when nobody sends: a sender blocked on a full socket is itself a sign of life
  // being awaited, and the receiving thread must never wait for the turn.
  send_control(wire::encode(wire::Ping{static_cast<std::uint64_t>(silent_ms)}));
  return 0;
}

template <class Framed>
void LinkCore::send_control(const Framed& f) {
  const iovec iov = engine::to_iov(&f, sizeof f);
  connection_->send_control({&iov, 1});  // a sender that holds the turn makes this frame needless
}

std::size_t LinkCore::stripe_count() const { return stripes_ ? stripes_->size() : 0; }

std::size_t Link::stripes() const { return LinkCore::of(*this).stripe_count(); }

const char* LinkCore::backend_name() const { return connection_->socket().backend(); }

const char* Link::backend() const { return LinkCore::of(*this).backend_name(); }

LinkCore::~LinkCore() { join(); }

void LinkCore::start() {
  receiver_ = std::thread([this] { receive_or_fail(); });
}

void LinkCore::join() {
  if (receiver_.joinable()) receiver_.join();
}

void LinkCore::close() {
  if (connection_) send_control(wire::encode(wire::Close{0}));
  shutdown();
}

void LinkCore::shutdown() {
  if (connection_) connection_->shutdown();
  if (stripes_) stripes_->shutdown();
}

const Account* Link::account(std::uint32_t id) const {
  for (const auto& a : accounts_) {
    if (a.id == id) return &a;
  }
  return nullptr;
}

LinkCounters Link::counters() const {
  const engine::Counters& c = LinkCore::of(*this).engine_counters();
  // relaxed: figures only, each on its own.
  const auto get = [](const std::atomic<std::uint64_t>& n) { return n.load(std::memory_order_relaxed); };
  return LinkCounters{.bytes_sent = get(c.bytes_sent),
                      .messages_sent = get(c.messages_sent),
                      .send_calls = get(c.send_calls),
                      .bytes_staged = get(c.bytes_staged),
                      .bytes_striped_out = get(c.bytes_striped_out),
                      .zc_sends = get(c.zc_sends),
                      .zc_copied = get(c.zc_copied),
                      .zc_fallbacks = get(c.zc_fallbacks),
                      .staging_chunks_allocated = get(c.staging_chunks_allocated),
                      .staging_registered_bytes = get(c.staging_registered_bytes),
                      .bytes_received = get(c.bytes_received),
                      .messages_received = get(c.messages_received),
                      .reads = get(c.reads),
                      .payload_bytes_copied = get(c.payload_bytes_copied),
                      .payload_bytes_direct = get(c.payload_bytes_direct),
                      .bytes_striped_in = get(c.bytes_striped_in),
                      .spin_reads = get(c.spin_reads),
                      .word_publishes = get(c.word_publishes)};
}

bool Link::agent_status_supported() const { return (features_ & wire::kFeatureStatus) != 0; }

std::uint64_t Link::fresh() {
  // relaxed: only uniqueness matters.
  const std::uint64_t n = next_id_.fetch_add(1, std::memory_order_relaxed);
  if (n >= (1ull << 48)) throw std::runtime_error("the link's ids are exhausted");
  return (tag_ << 48) | n;
}

void LinkCore::notify_all() {
  notify();
  for (const auto& s : slots_) {
    // acquire: pairs with register_proxy's release store.
    if (ProxySlot* p = s.load(std::memory_order_acquire)) p->events.notify();
  }
}

ProxySlot& LinkCore::register_proxy(std::uint32_t device, std::uint64_t* word) {
  std::lock_guard lock(registry_mu_);
  if (device >= slots_.size()) throw std::invalid_argument("device id past the maximum");
  ProxySlot* old = slots_[device].load(std::memory_order_acquire);
  if (old != nullptr) {
    if (!old->handshake.closed()) {
      throw std::invalid_argument("the link has a proxy of device " + std::to_string(device));
    }
    if (old->handed_over.load(std::memory_order_acquire)) {
      throw std::invalid_argument("a closed proxy of device " + std::to_string(device) +
                                  " handed work over on this link");
    }
  }
  // Allocate first: if this throws, nothing is registered.
  auto fresh_slot = std::make_unique<ProxySlot>(device, word);
  all_slots_.reserve(all_slots_.size() + 1);
  ProxySlot* p = fresh_slot.get();
  all_slots_.push_back(std::move(fresh_slot));  // cannot throw after the reserve
  // release: publishes the slot's immutable fields to the receiving thread and submitters.
  slots_[device].store(p, std::memory_order_release);
  return *p;
}

void LinkCore::register_request(PendingRequest& req) {
  for (;;) {
    // relaxed: ids need only be unique.
    req.id = next_request_.fetch_add(1, std::memory_order_relaxed);
    PendingRequest* expected = nullptr;
    // acq_rel: the receiving thread's acquire load of the slot sees req.id.
    auto& slot = requests_[req.id % kRequestSlots];
    if (slot.compare_exchange_strong(expected, &req, std::memory_order_acq_rel)) {
      return;
    }
  }
}

AgentAnswer LinkCore::await_answer(PendingRequest& req) {
  auto& slot = requests_[req.id % kRequestSlots];
  auto withdraw = [&]() -> bool {
    PendingRequest* expected = &req;
    return slot.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  };
  for (;;) {
    const std::uint32_t seen = events();
    // acquire: pairs with the receiving thread's release of done: the answer is written.
    if (req.done.load(std::memory_order_acquire) != 0) return std::move(req.answer);
    if (job_.over()) {
      if (withdraw()) throw edge::Fault(job_.fault_text());
      // The receiving thread is filling the answer right now: it finishes promptly.
    }
    wait_event(seen, 100'000'000);
  }
}

AgentAnswer LinkCore::ask(wire::Request request, std::span<const std::byte> tail) {
  job_.check();
  PendingRequest req;
  register_request(req);
  request.id = req.id;
  if (const int rc = send_request(request, tail); rc != 0) fail_send(rc);
  return await_answer(req);
}

int LinkCore::send_request(wire::Request request, std::span<const std::byte> tail) {
  request.tail_length = static_cast<std::uint32_t>(tail.size());
  const auto framed = wire::encode(request);
  const iovec iov[2] = {engine::to_iov(&framed, sizeof framed),
                        engine::to_iov(tail.data(), tail.size())};
  return connection_->send_combined({iov, tail.empty() ? 1u : 2u});
}

void LinkCore::fail_send(int rc) {
  test_hook::at(test_hook::Point::kSendFailed, 0);
  if (rc == -EPIPE || rc == -ECONNRESET) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(kSendFailureGraceNs);
    for (;;) {
      const std::uint32_t seen = events();  // before the looks: a change after them ends the wait
      // over: failed, or the close began (then the break is the close's own, and fail a no-op).
      if (receiver_ended() || job_.over()) break;
      const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(until - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      wait_event(seen, left.count());
    }
  }
  job_.fail("link to agent " + endpoint_ + ": send failed: " + std::strerror(-rc));
}

std::string Link::agent_status() { return LinkCore::of(*this).query_status(); }

std::string LinkCore::query_status() {
  if (!agent_status_supported()) {
    throw std::runtime_error("agent " + endpoint_ +
                             " does not answer status queries (its welcome did not accept kFeatureStatus)");
  }
  job_.check();
  PendingRequest req;
  register_request(req);  // status queries share the requests' ids and slots
  const auto framed = wire::encode_status_query(req.id);
  const iovec iov = engine::to_iov(&framed, sizeof framed);
  if (const int rc = connection_->send_combined({&iov, 1}); rc != 0) fail_send(rc);
  return await_answer(req).text;
}

void LinkCore::tell(wire::Request request, std::span<const std::byte> tail) noexcept {
  if (job_.over()) return;
  request.id = 0;  // no answer is awaited
  if (const int rc = send_request(request, tail); rc != 0) {
    try {
      fail_send(rc);
    } catch (...) {
      job_.fail("link to agent: send failed");  // no memory for the long text
    }
  }
}

void LinkCore::release(std::uint64_t id, wire::ReleaseKind kind) {
  if (job_.failed()) return;
  const auto framed = wire::encode(wire::Release{id, static_cast<std::uint16_t>(kind), 0, 0});
  const iovec iov = engine::to_iov(&framed, sizeof framed);
  const int rc = connection_->send_combined({&iov, 1});
  if (rc != 0 && !job_.closing()) fail_send(rc);
}

}  // namespace rig::remote
