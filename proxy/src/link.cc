#include "rig/remote/link.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <stdexcept>
#include <system_error>

#include "pending_request.h"
#include "proxy_slot.h"
#include "rig/engine/iov_cursor.h"
#include "rig/edge.hpp"
#include "rig/engine/futex.h"
#include "rig/engine/tcp.h"
#include "rig/remote/job.h"
#include "rig/wire/codec.h"

namespace rig::remote {
namespace {

constexpr int kHandshakeTimeoutMs = 10000;

// Receives exactly n bytes on a blocking fd within the handshake's time, or throws naming
// `what` (the handshake, or a stripe's join).
void handshake_recv(int fd, void* buf, std::size_t n, const std::string& what, const std::string& endpoint) {
  const int rc = engine::recv_within(fd, buf, n, kHandshakeTimeoutMs);
  if (rc == -ETIME) {
    throw std::runtime_error(what + " with agent " + endpoint + ": no answer within " +
                             std::to_string(kHandshakeTimeoutMs) + " ms");
  }
  if (rc == -ECONNRESET) throw std::runtime_error(what + " with agent " + endpoint + ": connection closed");
  if (rc != 0) throw std::system_error(-rc, std::generic_category(), what + " with agent " + endpoint);
}

// Reads one frame of the handshake on the blocking fd: its header and its body (8-byte aligned).
// A kFailure is the agent's refusal: thrown with its text; any type but `want` is an error.
std::vector<std::uint64_t> handshake_frame(int fd, wire::MsgType want, wire::FrameHeader& h,
                                           const std::string& what, const std::string& endpoint) {
  handshake_recv(fd, &h, sizeof h, what, endpoint);
  if (const char* bad = wire::check_header(h)) {
    throw std::runtime_error(what + " with agent " + endpoint + ": " + bad);
  }
  if (h.type == static_cast<std::uint16_t>(wire::MsgType::kFailure) && h.length <= 8 + wire::kMaxText) {
    std::vector<std::uint64_t> body((h.length + 7) / 8);
    handshake_recv(fd, body.data(), h.length, what, endpoint);
    wire::FailureView f;
    std::string why;
    if (wire::decode({reinterpret_cast<const std::byte*>(body.data()), h.length}, f, why)) {
      throw std::runtime_error("agent " + endpoint + " refused the " +
                               (what == "handshake" ? std::string("job") : what) + ": " + std::string(f.text));
    }
    throw std::runtime_error(what + " with agent " + endpoint + ": " + why);
  }
  if (h.type != static_cast<std::uint16_t>(want)) {
    throw std::runtime_error(what + " with agent " + endpoint + ": expected " +
                             wire::type_name(static_cast<std::uint16_t>(want)) + ", got " +
                             wire::type_name(h.type));
  }
  std::vector<std::uint64_t> body((h.length + 7) / 8);
  handshake_recv(fd, body.data(), h.length, what, endpoint);
  return body;
}

template <class M>
void handshake_send(int fd, const M& framed, const std::string& what, const std::string& endpoint) {
  if (::send(fd, &framed, sizeof framed, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof framed)) {
    throw std::system_error(errno, std::generic_category(), what + " with agent " + endpoint);
  }
}

// The stripes a link asks for: the option, or for kAuto none on loopback and the default
// elsewhere, unless RIG_STRIPES says.
int wanted_stripes(const LinkOptions& options, int fd) {
  int n = options.stripes;
  if (n == LinkOptions::kAuto) {
    if (const char* env = std::getenv("RIG_STRIPES"); env != nullptr && *env != 0) {
      n = std::atoi(env);
    } else {
      n = engine::peer_is_loopback(fd) ? 0 : LinkOptions::kDefaultStripes;
    }
  }
  return std::clamp(n, 0, static_cast<int>(wire::kMaxStripes));
}

std::unique_ptr<engine::Socket> make_link_socket(int fd, const LinkOptions& options,
                                                 engine::Counters& counters) {
  std::unique_ptr<engine::Socket> socket =
      engine::make_socket(fd, options.backend, {options.send_zc_bytes, &counters});
  if (options.inject_faults) {
    socket = std::make_unique<engine::FaultySocket>(std::move(socket), options.faults);
  }
  return socket;
}

}  // namespace

Link::Link(Job& job, std::string endpoint, const LinkOptions& options)
    : job_(job), tag_(take_link_tag()), endpoint_(std::move(endpoint)), staging_(options.staging) {
  int fd = -1;
  try {
    const engine::Endpoint ep = engine::parse_endpoint(endpoint_);
    fd = engine::tcp_connect(ep);
    const int stripes = wanted_stripes(options, fd);
    // The handshake runs on the blocking fd with a time bound, before any backend owns it.
    const std::uint32_t offer = wire::kFeaturePrograms | (stripes > 0 ? std::uint32_t{wire::kFeatureStripes} : 0u);
    handshake_send(fd, wire::frame(wire::MsgType::kHello, wire::Hello{wire::kMagic, wire::kVersion, 0, offer, 0}),
                   "handshake", endpoint_);
    wire::FrameHeader h{};
    const std::vector<std::uint64_t> body = handshake_frame(fd, wire::MsgType::kWelcome, h, "handshake", endpoint_);
    wire::WelcomeView welcome;
    std::string why;
    if (!wire::decode({reinterpret_cast<const std::byte*>(body.data()), h.length}, welcome, why)) {
      throw std::runtime_error("handshake with agent " + endpoint_ + ": " + why);
    }
    if ((welcome.fixed.features & ~offer) != 0) {
      throw std::runtime_error("handshake with agent " + endpoint_ + ": it accepted features never offered");
    }
    accounts_.assign(welcome.accounts.begin(), welcome.accounts.end());
    if ((welcome.fixed.features & wire::kFeatureStripes) != 0) {
      const std::vector<std::uint64_t> g = handshake_frame(fd, wire::MsgType::kStripeGrant, h, "handshake", endpoint_);
      wire::StripeGrant grant{};
      if (!wire::decode({reinterpret_cast<const std::byte*>(g.data()), h.length}, grant, why)) {
        throw std::runtime_error("handshake with agent " + endpoint_ + ": " + why);
      }
      join_stripes(ep, grant, stripes, options, fd);
    }
  } catch (...) {
    stripes_.reset();
    if (fd >= 0) ::close(fd);
    give_link_tag(static_cast<std::uint16_t>(tag_));
    throw;
  }
  connection_ = std::make_unique<engine::Connection>(make_link_socket(fd, options, counters_), counters_);
  reader_ = std::make_unique<engine::FrameReader>(connection_->socket(), counters_);
  reader_->set_exact_probe([this] { return large_copy_expected(); });
  silence_ms_ = options.silence_ms;
  if (options.keepalive_ms > 0) {
    reader_->set_idle_watch(options.keepalive_ms, [this](std::int64_t silent) { return on_idle(silent); });
  }
}

void Link::join_stripes(const engine::Endpoint& ep, const wire::StripeGrant& grant, int wanted,
                        const LinkOptions& options, int job_fd) {
  const auto count = static_cast<std::uint16_t>(std::min<std::uint32_t>(wanted, grant.max_stripes));
  // The threshold in KiB (rounded up) governs both directions: the agent learns it in the joins.
  const auto min_kib = static_cast<std::uint32_t>(
      std::clamp<std::uint64_t>((options.stripe_min_bytes + 1023) / 1024, 1, UINT32_MAX));
  stripe_min_bytes_ = std::uint64_t{min_kib} * 1024;
  stripes_ = std::make_unique<engine::StripeSet>(
      options.backend == engine::Backend::kUring && !options.inject_faults && engine::uring_available(),
      counters_, engine::resolve_send_zc_bytes(job_fd, options.send_zc_bytes));
  // The receiving thread is inside a striped receive, where the idle watch cannot run: the
  // same silence bound applies there.
  stripes_->set_silence_ms(options.silence_ms);
  for (std::uint16_t i = 0; i < count; ++i) {
    const int fd = engine::tcp_connect(ep);
    stripes_->add(make_link_socket(fd, options, counters_));  // owns the fd from here on
    const std::string what = "stripe " + std::to_string(i);
    const auto join = wire::frame(wire::MsgType::kJoin,
                                  wire::Join{wire::kMagic, wire::kVersion, i, count, 0, min_kib, grant.token});
    handshake_send(fd, join, what, endpoint_);
    wire::FrameHeader h{};
    const std::vector<std::uint64_t> echo = handshake_frame(fd, wire::MsgType::kJoin, h, what, endpoint_);
    if (h.length != sizeof join.msg || std::memcmp(echo.data(), &join.msg, sizeof join.msg) != 0) {
      throw std::runtime_error(what + " with agent " + endpoint_ + ": the join was not echoed");
    }
  }
}

int Link::send_striped(std::uint32_t device, std::uint32_t part, std::uint64_t value, const void* base,
                       std::uint64_t row_bytes, std::uint64_t pitch, std::uint64_t at, std::uint64_t n) {
  return stripes_->send_copy(*connection_, device, part, value, base, row_bytes, pitch, at, n);
}

int Link::on_idle(std::int64_t silent_ms) {
  if (silence_ms_ > 0 && silent_ms >= silence_ms_) {
    idle_why_ = "the agent sent nothing for " + std::to_string(silent_ms) + " ms";
    return -ETIMEDOUT;
  }
  // Ping only when nobody sends: a sender blocked on a full socket is itself a sign of life
  // being awaited, and the receiving thread must never wait for the turn.
  if (connection_->try_hold()) {
    const auto ping = wire::frame(wire::MsgType::kPing, wire::Ping{static_cast<std::uint64_t>(silent_ms)});
    ::send(connection_->socket().fd(), &ping, sizeof ping, MSG_DONTWAIT | MSG_NOSIGNAL);
    connection_->release();
  }
  return 0;
}

Link::~Link() {
  join();
  give_link_tag(static_cast<std::uint16_t>(tag_));
}

void Link::start() {
  receiver_ = std::thread([this] { receive_loop(); });
}

void Link::join() {
  if (receiver_.joinable()) receiver_.join();
}

void Link::close() {
  if (connection_ && connection_->try_hold()) {
    const auto framed = wire::frame(wire::MsgType::kClose, wire::Close{0});
    ::send(connection_->socket().fd(), &framed, sizeof framed, MSG_DONTWAIT | MSG_NOSIGNAL);
    connection_->release();
  }
  shutdown();
}

void Link::shutdown() {
  if (connection_) connection_->shutdown();
  if (stripes_) stripes_->shutdown();
}

const wire::Account* Link::account(std::uint32_t id) const {
  for (const auto& a : accounts_) {
    if (a.id == id) return &a;
  }
  return nullptr;
}

std::uint64_t Link::fresh() {
  // relaxed: only uniqueness matters.
  const std::uint64_t n = next_id_.fetch_add(1, std::memory_order_relaxed);
  if (n >= (1ull << 48)) throw std::runtime_error("the link's ids are exhausted");
  return (tag_ << 48) | n;
}

void Link::notify_all() {
  notify();
  for (const auto& s : slots_) {
    // acquire: pairs with register_proxy's release store.
    if (ProxySlot* p = s.load(std::memory_order_acquire)) p->events.notify();
  }
}

ProxySlot& Link::register_proxy(std::uint32_t device, std::uint64_t* word) {
  std::lock_guard lock(registry_mu_);
  if (device >= slots_.size()) throw std::invalid_argument("device id past the maximum");
  ProxySlot* old = slots_[device].load(std::memory_order_acquire);
  if (old != nullptr) {
    if (!old->closed.load(std::memory_order_acquire)) {
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

AgentAnswer Link::ask(wire::Request request, std::span<const std::byte> tail) {
  job_.check();
  PendingRequest req;
  for (;;) {
    // relaxed: ids need only be unique.
    req.id = next_request_.fetch_add(1, std::memory_order_relaxed);
    PendingRequest* expected = nullptr;
    // acq_rel: the receiving thread's acquire load of the slot sees req.id.
    auto& slot = requests_[req.id % kRequestSlots];
    if (slot.compare_exchange_strong(expected, &req, std::memory_order_acq_rel)) {
      break;
    }
  }
  auto& slot = requests_[req.id % kRequestSlots];
  auto withdraw = [&]() -> bool {
    PendingRequest* expected = &req;
    return slot.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
  };
  request.id = req.id;
  request.tail_length = static_cast<std::uint32_t>(tail.size());
  const auto framed = wire::frame(wire::MsgType::kRequest, request, tail.size());
  const iovec iov[2] = {engine::to_iov(&framed, sizeof framed),
                        engine::to_iov(tail.data(), tail.size())};
  const int rc = connection_->send_combined({iov, tail.empty() ? 1u : 2u});
  if (rc != 0) {
    job_.fail("link to agent " + endpoint_ + ": send failed: " + std::strerror(-rc));
  }
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

void Link::tell(wire::Request request, std::span<const std::byte> tail) noexcept {
  if (job_.over()) return;
  request.id = 0;  // no answer is awaited
  request.tail_length = static_cast<std::uint32_t>(tail.size());
  const auto framed = wire::frame(wire::MsgType::kRequest, request, tail.size());
  const iovec iov[2] = {engine::to_iov(&framed, sizeof framed),
                        engine::to_iov(tail.data(), tail.size())};
  const int rc = connection_->send_combined({iov, tail.empty() ? 1u : 2u});
  if (rc != 0) {
    try {
      job_.fail("link to agent " + endpoint_ + ": send failed: " + std::strerror(-rc));
    } catch (...) {
      job_.fail("link to agent: send failed");  // no memory for the long text
    }
  }
}

void Link::release(std::uint64_t id, wire::ReleaseKind kind) {
  if (job_.failed()) return;
  const auto framed = wire::frame(wire::MsgType::kRelease,
                                  wire::Release{id, static_cast<std::uint16_t>(kind), 0, 0});
  const iovec iov = engine::to_iov(&framed, sizeof framed);
  const int rc = connection_->send_combined({&iov, 1});
  if (rc != 0 && !job_.closing()) {
    job_.fail("link to agent " + endpoint_ + ": send failed: " + std::strerror(-rc));
  }
}

}  // namespace rig::remote
