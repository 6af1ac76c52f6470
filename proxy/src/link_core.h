// The library's side of a link (rig/remote/link.h): the receiving thread, the requests waiting
// for answers, the proxies' registry and the connections. Job::connect makes a LinkCore; the
// runtime sees it as its public base Link, and the proxies drive it through the calls here.
// Kept out of the installed headers: none of it is API, and its members change with the engine.
#pragma once

#include <sys/uio.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "rig/engine/backend.h"
#include "rig/engine/counters.h"
#include "rig/engine/event_word.h"
#include "rig/wire/outcome.h"
#include "rig/remote/link.h"
#include "rig/wire/messages.h"

namespace rig::engine {
struct Address;
class Connection;
class FrameReader;
class Socket;
class StripeSet;
struct Faults;
}  // namespace rig::engine

namespace rig::remote {

struct ProxySlot;
struct ClientCopy;
struct PendingRequest;

/// Process-wide link tags (the top 16 bits of ids): taken by a link, given back by its end.
std::uint16_t take_link_tag();
void give_link_tag(std::uint16_t tag);

/// The answer of a request.
struct AgentAnswer {
  wire::AnswerStatus status = wire::AnswerStatus::kOk;
  std::uint64_t value = 0;
  std::string text;
};

class LinkCore final : public Link {
 public:
  /// Made by connect, which then starts the receiving thread: connects to `endpoint`, does the
  /// handshake and joins the stripes granted. Throws as Job::connect says. With `faults` (tests
  /// only: test_connect.h), every socket of the link is an engine::FaultySocket with them, and
  /// the stripes use the plain backend.
  LinkCore(Job& job, std::string endpoint, const LinkOptions& options,
           std::shared_ptr<const engine::Faults> faults = nullptr);
  ~LinkCore() override;
  void start();
  /// Job::connect's work: makes the link, adds it to the job and starts its receiving thread.
  static Link& connect(Job& job, const std::string& endpoint, const LinkOptions& options,
                       std::shared_ptr<const engine::Faults> faults);

  /// The library's view of a link the runtime holds: every Link is a LinkCore.
  static LinkCore& of(Link& link) { return static_cast<LinkCore&>(link); }
  static const LinkCore& of(const Link& link) { return static_cast<const LinkCore&>(link); }

  /// Sends a request and blocks for its answer. Throws edge::Fault once the job is over
  /// (before sending, or while waiting). Holds no lock while it waits.
  AgentAnswer ask(wire::Request request, std::span<const std::byte> tail);
  /// Sends a request whose answer nobody waits for (prepare). Nothing once the job is over.
  void tell(wire::Request request, std::span<const std::byte> tail) noexcept;
  /// Sends the release of an object or image after every message sent before it. Nothing once
  /// the job has failed.
  void release(std::uint64_t id, wire::ReleaseKind kind);
  /// Link::agent_status's work.
  std::string query_status();

  engine::Connection& connection() { return *connection_; }
  /// The counters the connection, the reader and the stripes bump (Link::counters copies them).
  const engine::Counters& engine_counters() const { return counters_; }

  /// Link::backend's and Link::stripes' answers.
  const char* backend_name() const;
  std::size_t stripe_count() const;
  /// The link's data connections, which know the stripe threshold (null: no striping); a
  /// copy's way is engine::CopyBytes::way's.
  engine::StripeSet* stripes() const { return stripes_.get(); }

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
  // acquire: pairs with end_receiver's release.
  bool receiver_ended() const { return receiver_ended_.load(std::memory_order_acquire); }
  /// Fails the job for a send that returned -errno `rc`. A send broken by the agent's close
  /// (EPIPE, ECONNRESET) first waits, at most kSendFailureGraceNs, for the receiving thread to
  /// end or the job to fail: the agent may have ended the job first and said why in a failure
  /// still queued here, which the receiving thread reads before it ends, and the job keeps the
  /// first failure, so the agent's reason (the root cause) is the one kept.
  void fail_send(int rc);
  static constexpr std::int64_t kSendFailureGraceNs = 500'000'000;
  /// Requests waiting for their answers at once, at most (their slots: id % kRequestSlots).
  static constexpr std::size_t kRequestSlots = 1024;

  /// Tells the agent the job closes (a kClose, only if the connection is idle: it never
  /// waits), then shuts the connection down (every blocked send and receive returns).
  void close();
  /// Shuts the connection down (every blocked send and receive returns).
  void shutdown();
  /// Waits for the receiving thread to end.
  void join();

  /// Copies into this process's memory of at least this many bytes are received with zero
  /// user-space copies: while one is pending, the receiving thread reads headers exactly.
  static constexpr std::uint64_t kZeroCopyBytes = 64 * 1024;
  /// Submit: a large copy into this process's memory was recorded. relaxed: a stale read only
  /// costs the receiving thread a buffered (copied) chunk, never correctness; the record itself
  /// is published by the ring's release.
  void expect_large_copy() { large_submitted_.fetch_add(1, std::memory_order_relaxed); }

 private:
  // The receiving thread's body: receive_loop behind the thread's exception barrier.
  void receive_or_fail() noexcept;
  void receiver_threw(const char* what) noexcept;
  void receive_loop();
  // The next frame, or how the stream ended: each step below is ok to go on, or the failure
  // that ends the job (wire::Outcome: -EPROTO a violation by the agent, which
  // receive_loop names once; kPeerEnded the agent's failure; else the connection's end).
  wire::Outcome receive_next();
  wire::Outcome receive_frame(const wire::FrameHeader& h);
  // A frame other than kBytes, its body read.
  wire::Outcome on_control(wire::MsgType type, std::span<const std::byte> body);
  wire::Outcome on_answer(std::span<const std::byte> body);
  wire::Outcome on_status(std::span<const std::byte> body);
  /// The receiving thread: hands `answer` to the request waiting under `id`; a violation
  /// naming `what` if none waits.
  wire::Outcome complete_request(std::uint64_t id, AgentAnswer answer, const char* what);
  /// ask()'s steps: registers `req` under a fresh id; then, once its message is sent, waits.
  void register_request(PendingRequest& req);
  AgentAnswer await_answer(PendingRequest& req);
  /// Frames and sends a request (its tail_length set from `tail`): 0 or -errno.
  int send_request(wire::Request request, std::span<const std::byte> tail);
  wire::Outcome on_bytes(const wire::Bytes& bytes);
  /// Checks a done report and adds it to the pending run (see pending_done_).
  wire::Outcome on_done(const wire::Done& done);
  /// Publishes the pending run of done reports, if any: one raise of its word (a release
  /// store) and one wake of its waiters; the run is empty after.
  void publish_pending_done();
  wire::Outcome on_striped(const wire::Striped& s);
  /// The pending copy into this process's memory that bytes (device, part, value, offset,
  /// length) must continue, in `out`; else the violation.
  wire::Outcome expect_copy(std::uint32_t device, std::uint32_t part, std::uint64_t value, std::uint64_t offset,
                            std::uint64_t length, const char* what, ClientCopy*& out);
  void landed(ProxySlot& s, ClientCopy& c, std::uint64_t length);
  /// A socket of the link (the job's connection or a stripe) on `fd`, counting into counters_.
  std::unique_ptr<engine::Socket> make_socket(int fd, const LinkOptions& options);
  void join_stripes(const engine::Address& reached, const wire::StripeGrant& grant,
                    const std::array<std::uint8_t, 32>& key, int wanted, const LinkOptions& options, int job_fd);
  // The reason a read of the agent's stream failed with `rc` (< 0): on -ETIMEDOUT the idle
  // watch's silence, TCP's giving up (engine::tcp_gave_up), or the silence bound `inside` a
  // frame or payload; else the connection lost, with errno's text.
  std::string read_failure(int rc, const char* inside = "inside a frame") const;
  wire::Outcome read_failed(int rc, const char* inside = "inside a frame") const;
  void end_receiver();
  int on_idle(std::int64_t silent_ms);
  /// Sends a small control frame (a ping, a close) through the socket backend if the send turn
  /// is free, without waiting for room in the socket; a part the kernel takes is completed, so
  /// the stream never holds half a frame.
  template <class Framed>
  void send_control(const Framed& f);
  bool large_copy_expected() const {
    return large_submitted_.load(std::memory_order_relaxed) != large_landed_.load(std::memory_order_relaxed);
  }

  /// Before the connection, the reader and the stripes, which count into it until they end.
  engine::Counters counters_;
  std::shared_ptr<const engine::Faults> faults_;  ///< tests only: null but for connect_with_faults
  engine::Backend backend_;  ///< LinkOptions::backend, kDefault resolved
  std::unique_ptr<engine::Connection> connection_;
  std::unique_ptr<engine::FrameReader> reader_;
  std::unique_ptr<engine::StripeSet> stripes_;  ///< null: no striping
  std::thread receiver_;

  std::atomic<std::uint64_t> next_request_{1};

  engine::EventWord events_;

  /// Pending requests by id % kRequestSlots (claimed by CAS from null; kBusy while the
  /// receiving thread fills one).
  std::array<std::atomic<PendingRequest*>, kRequestSlots> requests_{};

  /// Proxies by device id. Written under registry_mu_ (make, cold) with release; read by the
  /// receiving thread and submit with acquire.
  std::array<std::atomic<ProxySlot*>, wire::kMaxDevices> slots_{};
  std::mutex registry_mu_;
  std::vector<std::unique_ptr<ProxySlot>> all_slots_;  ///< every slot ever made, until ~LinkCore

  /// Receiver-owned: the run of done reports of one device that came one right after another,
  /// not yet published (bytes frames of copies into this process may come between them). It is
  /// published (publish_pending_done) when a frame of another kind (an answer, a ping, striped
  /// bytes) or a report of another device comes, before the reader reads the socket again, and
  /// when the receiving thread ends: so a word is raised once per run, not once per report, no
  /// report waits behind a read, an answer that came after a report finds the word raised, and
  /// reports of different devices keep their order (a value that waited on another device's
  /// value never becomes visible before it).
  struct PendingDone {
    ProxySlot* slot = nullptr;  ///< null: no run
    std::uint64_t value = 0;    ///< the highest value of the run
  };
  PendingDone pending_done_;

  /// Receiver-owned scratch for scatter receives of strided rows.
  std::vector<iovec> row_iov_;

  std::atomic<bool> receiver_ended_{false};  ///< release/acquire; see stop_handshake.h
  int silence_ms_ = 0;
  std::string idle_why_;  ///< receiver-owned: why the idle watch ended the wait

  alignas(64) std::atomic<std::uint64_t> large_submitted_{0};  ///< submitters
  alignas(64) std::atomic<std::uint64_t> large_landed_{0};     ///< the receiving thread
};

}  // namespace rig::remote
