// A link: this process's end of its connection to one machine's agent (the page's Link.t).
// It owns the receiving thread, the only reader of the connection, which completes requests,
// lands the bytes of copies into this process's memory, and publishes done reports into the
// proxies' timeline words.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "rig/engine/counters.h"
#include "rig/engine/event_word.h"
#include "rig/engine/socket.h"
#include "rig/export.h"
#include "rig/wire/messages.h"

namespace rig::engine {
struct Address;
class Connection;
struct Faults;
class FrameReader;
class StripeSet;
}  // namespace rig::engine

namespace rig::remote {

class Job;
struct ProxySlot;
struct ClientCopy;

/// Process-wide link tags (the top 16 bits of ids): taken by a link, given back by its end.
std::uint16_t take_link_tag();
void give_link_tag(std::uint16_t tag);
struct PendingRequest;

/// Where submit gets the memory it packs strided rows into (the connection's staging pool by
/// default). A test or an embedder may supply its own, used per submit instead of the pool;
/// returning null makes submit answer "out of memory for a hand-over".
struct StagingAllocator {
  void* (*allocate)(std::size_t bytes) = nullptr;
  void (*release)(void* p) = nullptr;
};

struct LinkOptions {
  engine::Backend backend = engine::default_backend();
  /// Keepalive: after keepalive_ms without a byte from the agent, the link pings it (the agent
  /// echoes); after silence_ms without a byte, the job fails with "the agent sent nothing for
  /// N ms". This finds a hung or unreachable agent within silence_ms + keepalive_ms. An agent
  /// busy in one launch longer than silence_ms also fails the job: raise it for such programs.
  int keepalive_ms = 1000;
  int silence_ms = 30000;
  /// Polling mode: the receiving thread asks for bytes without waiting for up to poll_us
  /// microseconds before it sleeps (engine::FrameReader::set_spin_us): lower latency for a
  /// core's worth of CPU while it spins. Default: RIG_POLL_US, else 0 (off). See docs/TUNING.md.
  int poll_us = engine::default_poll_us();
  /// Where submit packs strided rows: unset, the connection's staging pool (reused chunks,
  /// registered as fixed buffers within RLIMIT_MEMLOCK); set, this allocator, per submit.
  StagingAllocator staging{};
  /// Sends of at least this many bytes go zero-copy (io_uring SEND_ZC, returning after the
  /// kernel's notification). engine::kSendZcAuto: RIG_SEND_ZC_BYTES if set, else off when the
  /// agent is on loopback and 1 MiB otherwise; 0: never. See docs/TUNING.md. Striped pieces
  /// follow it too (io_uring backend).
  std::size_t send_zc_bytes = engine::kSendZcAuto;
  /// Striping: copies of at least stripe_min_bytes bytes from or into this process's memory
  /// cross over `stripes` extra data connections (wire kStriped), cut in pieces of
  /// max(64 KiB, 4 MiB / stripes) bytes (engine::StripeSet::send_copy), every stripe's transfer in flight at once. kAuto: none
  /// when the agent is on loopback (one machine's cores carry both ends: nothing to gain),
  /// kDefaultStripes otherwise; the environment's RIG_STRIPES=N overrides kAuto. The agent may
  /// grant fewer (its --max-stripes). docs/TUNING.md says how to choose both on a real NIC.
  static constexpr int kAuto = -1;
  static constexpr int kDefaultStripes = 4;
  int stripes = kAuto;
  std::uint64_t stripe_min_bytes = 1u << 20;
  /// The secret this job and its agent prove to each other that they share (wire/PROTOCOL.md 4):
  /// the file that holds it (readable by its owner only, at least 32 bytes); empty: the
  /// environment's RIG_SECRET_FILE, else RIG_SECRET. With none, only an agent that runs open
  /// (on loopback, without a secret) is accepted; with one, only an agent that proves it.
  std::string secret_file;
  /// Tests only: set, the job's socket is wrapped in an engine::FaultySocket with these faults
  /// (rig/engine/faulty_socket.h, not installed), and the stripes use the plain backend.
  std::shared_ptr<const engine::Faults> faults;
};

/// The answer of a request.
struct AgentAnswer {
  wire::AnswerStatus status = wire::AnswerStatus::kOk;
  std::uint64_t value = 0;
  std::string text;
};

class RIG_API Link {
 public:
  ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  Job& job() const { return job_; }
  const std::string& endpoint() const { return endpoint_; }
  /// The address the job's connection reached, numeric ("127.0.0.1:7300", "[::1]:7300"): the
  /// first of the endpoint's addresses that accepted. Its stripes connect to it too.
  const std::string& address() const { return address_; }
  /// Where each stripe's connection went (its peer's address), in stripe order.
  const std::vector<std::string>& stripe_addresses() const { return stripe_addresses_; }
  const std::vector<wire::Account>& accounts() const { return accounts_; }
  const wire::Account* account(std::uint32_t id) const;
  engine::Counters& counters() { return counters_; }
  const char* backend() const;
  const StagingAllocator& staging() const { return staging_; }

  /// Whether the agent answers status queries (it accepted wire::kFeatureStatus in its welcome;
  /// an agent older than the query does not, and is never sent one).
  bool agent_status_supported() const { return (features_ & wire::kFeatureStatus) != 0; }
  /// Asks the agent for its own figures (wire kStatusQuery, answered in order with the job's
  /// other messages) and returns its JSON text: version, uptime, jobs, bytes in and out, this
  /// job's connection counters, and every agent thread's CPU time, context switches and system
  /// calls (wire/PROTOCOL.md 5.18). Throws std::runtime_error when the agent does not answer
  /// status queries (nothing is sent then), edge::Fault once the job is over; an answer that
  /// breaks the protocol (too long, another id) fails the job with the reason.
  std::string agent_status();

  /// A new id of the job, naming an agent object (the page's Link.fresh). Ids carry the link's
  /// number in their top 16 bits, so owns() tells without a lookup whether an id is this link's.
  std::uint64_t fresh();
  bool owns(std::uint64_t id) const { return (id >> 48) == tag_; }

  // ---- used by proxies (internal) ----

  /// Sends a request and blocks for its answer. Throws edge::Fault once the job is over
  /// (before sending, or while waiting). Holds no lock while it waits.
  AgentAnswer ask(wire::Request request, std::span<const std::byte> tail);
  /// Sends a request whose answer nobody waits for (prepare). Nothing once the job is over.
  void tell(wire::Request request, std::span<const std::byte> tail) noexcept;
  /// Sends the release of an object or image after every message sent before it. Nothing once
  /// the job has failed.
  void release(std::uint64_t id, wire::ReleaseKind kind);

  engine::Connection& connection() { return *connection_; }

  /// The data connections granted (0: no striping).
  std::size_t stripes() const;
  /// Whether a copy of `bytes` bytes crosses on the stripes.
  bool stripes_copy(std::uint64_t bytes) const { return stripes_ && bytes >= stripe_min_bytes_; }
  /// Sends packed bytes [at, at + n) of a copy from this process's memory (packed byte k at
  /// base + (k / row_bytes) * pitch + k % row_bytes) as kStriped announcements on the job's
  /// connection, each followed by its pieces on the stripes. Caller holds the connection's turn
  /// (Connection::Hold). Borrows the memory until it returns; 0 or -errno.
  int send_striped(std::uint32_t device, std::uint32_t part, std::uint64_t value, const void* base,
                   std::uint64_t row_bytes, std::uint64_t pitch, std::uint64_t at, std::uint64_t n);

  /// Registry of proxies by the agent's device id. Throws std::invalid_argument per make's rules.
  ProxySlot& register_proxy(std::uint32_t device, std::uint64_t* word);
  ProxySlot* slot(std::uint32_t device) const {
    // acquire: pairs with register_proxy's release store: the slot's fields are set.
    return device < slots_.size() ? slots_[device].load(std::memory_order_acquire) : nullptr;
  }

  /// Link-wide events: an answer, a failure, the close, the receiving thread's end. Each proxy
  /// has events of its own for its word (ProxySlot::events), so a publish wakes only the
  /// threads waiting on that proxy.
  std::uint32_t events() const { return events_.current(); }
  void wait_event(std::uint32_t seen, std::int64_t timeout_ns) { events_.wait(seen, timeout_ns); }
  void notify() { events_.notify(); }
  /// Wakes every waiter of the link and of its proxies (failure, close, end).
  void notify_all();

  /// Whether the receiving thread has ended (no byte of a copy may land any more).
  bool receiver_ended() const { return receiver_ended_.load(std::memory_order_seq_cst); }

  /// Tells the agent the job closes (a kClose, only if the connection is idle: it never
  /// waits), then shuts the connection down (every blocked send and receive returns).
  void close();
  /// Shuts the connection down (every blocked send and receive returns).
  void shutdown();
  /// Waits for the receiving thread to end.
  void join();

  /// Internal: made by Job::connect, which then starts the receiving thread.
  Link(Job& job, std::string endpoint, const LinkOptions& options);
  void start();

 private:
  friend class Job;
  void handshake();
  void receive_loop();
  bool on_answer(std::span<const std::byte> body, std::string& why);
  bool on_status(std::span<const std::byte> body, std::string& why);
  /// The receiving thread: hands `answer` to the request waiting under `id`; false (with why
  /// naming `what`) if none waits.
  bool complete_request(std::uint64_t id, AgentAnswer answer, const char* what, std::string& why);
  /// ask()'s steps: registers `req` under a fresh id; then, once its message is sent, waits.
  void register_request(PendingRequest& req);
  AgentAnswer await_answer(PendingRequest& req);
  /// Frames and sends a request (its tail_length set from `tail`): 0 or -errno.
  int send_request(wire::Request request, std::span<const std::byte> tail);
  /// Fails the job for a send that returned -errno `rc`.
  void fail_send(int rc);
  bool on_bytes(const wire::Bytes& bytes, std::string& why);
  bool on_done(const wire::Done& done, std::string& why);
  bool on_striped(const wire::Striped& s, std::string& why);
  /// The pending copy into this process's memory that bytes (device, part, value, offset,
  /// length) must continue, or null with `why`.
  ClientCopy* expect_copy(std::uint32_t device, std::uint32_t part, std::uint64_t value,
                                 std::uint64_t offset, std::uint64_t length, const char* what,
                                 std::string& why);
  void landed(ProxySlot& s, ClientCopy& c, std::uint64_t length);
  void join_stripes(const engine::Address& reached, const wire::StripeGrant& grant,
                    const std::array<std::uint8_t, 32>& key, int wanted, const LinkOptions& options, int job_fd);
  void end_receiver();

  Job& job_;
  const std::uint64_t tag_;  ///< taken in the constructor, given back in the destructor
  std::string endpoint_;
  std::string address_;
  std::vector<std::string> stripe_addresses_;
  StagingAllocator staging_;
  engine::Counters counters_;
  std::unique_ptr<engine::Connection> connection_;
  std::unique_ptr<engine::FrameReader> reader_;
  std::unique_ptr<engine::StripeSet> stripes_;  ///< null: no striping
  std::uint64_t stripe_min_bytes_ = 0;
  std::vector<wire::Account> accounts_;
  std::uint32_t features_ = 0;  ///< accepted by the agent's welcome; set before the receiving thread starts
  std::thread receiver_;

  /// fresh ids: relaxed, only uniqueness matters.
  alignas(64) std::atomic<std::uint64_t> next_id_{1};
  std::atomic<std::uint64_t> next_request_{1};

  engine::EventWord events_;

  /// Pending requests by id % kRequestSlots (claimed by CAS from null; kBusy while the
  /// receiving thread fills one).
  static constexpr std::size_t kRequestSlots = 1024;
  std::array<std::atomic<PendingRequest*>, kRequestSlots> requests_{};

  /// Proxies by device id. Written under registry_mu_ (make, cold) with release; read by the
  /// receiving thread and submit with acquire.
  std::array<std::atomic<ProxySlot*>, wire::kMaxDevices> slots_{};
  std::mutex registry_mu_;
  std::vector<std::unique_ptr<ProxySlot>> all_slots_;  ///< every slot ever made, until ~Link

  /// Receiver-owned scratch for scatter receives of strided rows.
  std::vector<iovec> row_iov_;

  std::atomic<bool> receiver_ended_{false};  ///< seq_cst: the stop/receiver handshake
  int silence_ms_ = 0;
  std::string idle_why_;  ///< receiver-owned: why the idle watch ended the wait
  int on_idle(std::int64_t silent_ms);
  /// Sends a small control frame (a ping, a close) through the socket backend if the send turn
  /// is free, without waiting for room in the socket; a part the kernel takes is completed, so
  /// the stream never holds half a frame.
  template <class Framed>
  void send_control(const Framed& f);

 public:
  /// Copies into this process's memory of at least this many bytes are received with zero
  /// user-space copies: while one is pending, the receiving thread reads headers exactly.
  static constexpr std::uint64_t kZeroCopyBytes = 64 * 1024;
  /// Submit: a large copy into this process's memory was recorded. relaxed: a stale read only
  /// costs the receiving thread a buffered (copied) chunk, never correctness; the record itself
  /// is published by the ring's release.
  void expect_large_copy() { large_submitted_.fetch_add(1, std::memory_order_relaxed); }

 private:
  bool large_copy_expected() const {
    return large_submitted_.load(std::memory_order_relaxed) != large_landed_.load(std::memory_order_relaxed);
  }
  alignas(64) std::atomic<std::uint64_t> large_submitted_{0};  ///< submitters
  alignas(64) std::atomic<std::uint64_t> large_landed_{0};     ///< the receiving thread
};

}  // namespace rig::remote
