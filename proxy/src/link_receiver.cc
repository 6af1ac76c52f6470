// The link's receiving thread: the only reader of the link's connection.
#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "pending_request.h"
#include "proxy_slot.h"
#include "rig/remote/job.h"
#include "link_core.h"
#include "test_hook.h"
#include "rig/engine/connection.h"
#include "rig/engine/frame_reader.h"
#include "rig/engine/packed_rows.h"
#include "rig/engine/stripe_set.h"
#include "rig/engine/tcp.h"
#include "rig/wire/codec.h"

namespace rig::remote {

void LinkCore::receive_or_fail() noexcept {
  ::pthread_setname_np(::pthread_self(), "rig-recv");  // found by name in /proc (rig-bench's cost figures)
  // No exception crosses the thread's edge: one (no memory for a reason, for a copy's rows)
  // fails the job with its text, and the thread ends as at the stream's end.
  try {
    receive_loop();
  } catch (const std::exception& e) {
    receiver_threw(e.what());
  } catch (...) {
    receiver_threw("an unknown exception");
  }
}

void LinkCore::receiver_threw(const char* what) noexcept {
  job_.fail_noexcept({"link to agent ", endpoint_, ": the receiving thread stopped: ", what});
  if (!receiver_ended()) end_receiver();
}

namespace {

using wire::violation;

// The one place the receiving thread's failures get their context: a violation is the agent's.
std::string described(const wire::Outcome& end) {
  return end.err() == -EPROTO ? "protocol violation by the agent: " + end.why() : end.why();
}

}  // namespace

void LinkCore::receive_loop() {
  wire::Outcome end;
  while (end.ok()) end = receive_next();
  publish_pending_done();  // the reports that came before the end were checked: they stand
  job_.fail("link to agent " + endpoint_ + ": " + described(end));  // no-op once the close has begun
  end_receiver();
}

wire::Outcome LinkCore::receive_next() {
  wire::FrameHeader h{};
  const wire::Outcome got = reader_->next(h);
  if (got.ok()) return receive_frame(h);
  if (got.err() == wire::kStreamEnded) return wire::Outcome::failed(-ECONNRESET, "the agent closed the connection");
  if (got.err() == -EPROTO) return got;  // a violation: receive_loop names the agent
  return read_failed(got.err());  // between frames or inside one: the same reasons
}

wire::Outcome LinkCore::read_failed(int rc, const char* inside) const {
  return wire::Outcome::failed(rc, read_failure(rc, inside));
}

wire::Outcome LinkCore::receive_frame(const wire::FrameHeader& h) {
  const auto type = static_cast<wire::MsgType>(h.type);
  // A frame that may change what another thread sees, or that is received outside this
  // reader (striped bytes), ends the run of done reports first, so the stream's order holds.
  // A kBytes frame does not: its bytes land in memory that no report of the run covers, and
  // a payload the buffer does not hold yet is read only after the run is published (the
  // reader's before_read hook).
  if (type != wire::MsgType::kDone && type != wire::MsgType::kBytes) publish_pending_done();
  if (type == wire::MsgType::kBytes) {
    std::span<const std::byte> fixed;
    if (const int rc = reader_->body(sizeof(wire::Bytes), fixed); rc != 0) return read_failed(rc);
    wire::Bytes b{};
    RIG_RETURN_IF_FAILED(wire::decode_bytes(fixed, h.length, b));  // -EPROTO: a violation
    return on_bytes(b);
  }
  std::span<const std::byte> body;
  if (const int rc = reader_->body(h.length, body); rc != 0) return read_failed(rc);
  return on_control(type, body);
}

wire::Outcome LinkCore::on_control(wire::MsgType type, std::span<const std::byte> body) {
  // A message that does not decode is a violation (-EPROTO), whatever its type.
  switch (type) {
    case wire::MsgType::kAnswer: return on_answer(body);
    case wire::MsgType::kStatus: return on_status(body);
    case wire::MsgType::kDone: {
      wire::Done d{};
      RIG_RETURN_IF_FAILED(wire::decode(body, d));
      return on_done(d);
    }
    case wire::MsgType::kFailure: {
      wire::FailureView f;
      RIG_RETURN_IF_FAILED(wire::decode(body, f));
      return wire::Outcome::failed(wire::kPeerEnded, "the agent failed the job: " + std::string(f.text));
    }
    case wire::MsgType::kPing: {  // the agent's echo, or its own ping while busy: the silence ends
      wire::Ping p{};
      return wire::decode(body, p);
    }
    case wire::MsgType::kStriped: {
      wire::Striped st{};
      RIG_RETURN_IF_FAILED(wire::decode(body, st));
      return on_striped(st);
    }
    default:
      return violation(std::string("unexpected ") + wire::type_name(static_cast<std::uint16_t>(type)) + " message");
  }
}

std::string LinkCore::read_failure(int rc, const char* inside) const {
  if (rc != -ETIMEDOUT) return std::string("connection lost: ") + std::strerror(-rc);
  if (!idle_why_.empty()) return idle_why_;  // the idle watch's bound, between frames
  // The kernel's ETIMEDOUT (keepalive probes or data unanswered) is no silence of the agent's.
  if (engine::tcp_gave_up(connection_->socket().fd())) return engine::kTcpGaveUp;
  return "the agent sent nothing for " + std::to_string(silence_ms_) + " ms " + inside;
}

void LinkCore::end_receiver() {
  // release: pairs with receiver_ended()'s acquire; Proxy::stop sees it when this thread's
  // change of the slot's handshake (write_final_from_receiver) comes before stop's mark.
  receiver_ended_.store(true, std::memory_order_release);
  {
    std::lock_guard lock(registry_mu_);
    for (auto& s : all_slots_) s->write_final_from_receiver();
  }
  notify_all();
}

wire::Outcome LinkCore::on_answer(std::span<const std::byte> body) {
  wire::AnswerView a;
  RIG_RETURN_IF_FAILED(wire::decode(body, a));
  return complete_request(
      a.fixed.id, AgentAnswer{static_cast<wire::AnswerStatus>(a.fixed.status), a.fixed.value, std::string(a.text)},
      "answer");
}

wire::Outcome LinkCore::on_status(std::span<const std::byte> body) {
  wire::StatusView s;
  RIG_RETURN_IF_FAILED(wire::decode(body, s));
  if (!agent_status_supported()) {  // never asked: kFeatureStatus was not accepted
    return violation("status message although kFeatureStatus was not accepted");
  }
  return complete_request(s.fixed.id, AgentAnswer{wire::AnswerStatus::kOk, 0, std::string(s.text)}, "status");
}

wire::Outcome LinkCore::complete_request(std::uint64_t id, AgentAnswer answer, const char* what) {
  auto& slot = requests_[id % kRequestSlots];
  const auto no_request = [&] { return violation(std::string(what) + " " + std::to_string(id) + " to no pending request"); };
  // acquire: pairs with register_request()'s CAS, so req->id is visible.
  PendingRequest* req = slot.load(std::memory_order_acquire);
  if (req == nullptr || req == busy_request()) return no_request();
  // Claim first, read after: a caller whose job is over may withdraw its request (and leave
  // the frame it lives in) until the claim, so req->id is read only once the claim holds it.
  // acq_rel: claims the request against the caller's withdrawal.
  if (!slot.compare_exchange_strong(req, busy_request(), std::memory_order_acq_rel)) {
    return {};  // the caller withdrew (the job is over): drop the answer
  }
  if (req->id != id) {  // another request shares the slot: give it back
    // release: pairs with the caller's withdrawal CAS and the next claim's acquire.
    slot.store(req, std::memory_order_release);
    notify();  // a caller that found the slot busy waits on the link's events
    return no_request();
  }
  req->answer = std::move(answer);
  // release: pairs with ask()'s acquire: the answer is written.
  req->done.store(1, std::memory_order_release);
  // release: the slot is free for the next request.
  slot.store(nullptr, std::memory_order_release);
  notify();
  return {};
}

wire::Outcome LinkCore::expect_copy(std::uint32_t device, std::uint32_t part, std::uint64_t value,
                                     std::uint64_t offset, std::uint64_t length, const char* what, ClientCopy*& out) {
  // Only a violation names them: the success path allocates nothing.
  const auto named = [&] {
    return std::string(what) + " (device " + std::to_string(device) + ", value " + std::to_string(value) +
           ", part " + std::to_string(part);
  };
  ProxySlot* s = slot(device);
  if (s == nullptr) {
    return violation(std::string(what) + " for device " + std::to_string(device) + " that the link never registered");
  }
  if (s->copies.empty()) return violation(named() + ") match no pending copy");
  ClientCopy& c = s->copies.front();
  if (c.value != value || c.part != part || offset != c.landed || length > c.total - c.landed) {
    return violation(named() + ", offset " + std::to_string(offset) + ", length " + std::to_string(length) +
                     ") do not match the pending copy (value " + std::to_string(c.value) + ", part " +
                     std::to_string(c.part) + ", " + std::to_string(c.landed) + " of " + std::to_string(c.total) +
                     " bytes landed)");
  }
  out = &c;
  return {};
}

void LinkCore::landed(ProxySlot& s, ClientCopy& c, std::uint64_t length) {
  c.landed += length;
  if (c.landed == c.total) {
    if (c.total >= kZeroCopyBytes) {
      // relaxed: only this thread writes it; see expect_large_copy().
      large_landed_.store(large_landed_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    s.copies.pop();
    test_hook::at(test_hook::Point::kReceiverPoppedCopy, s.device);
    // The pop, then a change of the handshake: stop, marking it, sees one or the other.
    if ((s.handshake.look_after_pop() & StopHandshake::kStopped) != 0 && s.copies.drained()) {
      publish_pending_done();  // another word's reports that came first are published first
      s.write_final_from_receiver();
    }
  }
}

wire::Outcome LinkCore::on_bytes(const wire::Bytes& b) {
  ClientCopy* c = nullptr;
  if (auto o = expect_copy(b.device, b.part, b.value, b.offset, b.length, "bytes", c); !o.ok()) return o;
  // Straight into the rows that [offset, offset + length) of the packed bytes cover.
  row_iov_.clear();
  engine::append_rows(row_iov_, c->base, c->row_bytes, c->pitch, b.offset, b.length);
  if (const int rc = reader_->payload(row_iov_); rc != 0) return read_failed(rc, "inside a bytes payload");
  landed(*slot(b.device), *c, b.length);
  return {};
}

wire::Outcome LinkCore::on_striped(const wire::Striped& st) {
  if (!stripes_) return violation("striped bytes on a link without stripes");
  ClientCopy* c = nullptr;
  if (auto o = expect_copy(st.device, st.part, st.value, st.offset, st.length, "striped bytes", c); !o.ok()) return o;
  if (wire::Outcome got = stripes_->recv_striped(st, c->base, c->row_bytes, c->pitch); !got.ok()) {
    if (got.err() != -ETIMEDOUT) return got;  // a violation, no memory, a stripe lost: said
    return wire::Outcome::failed(-ETIMEDOUT, "the agent sent nothing on its stripes for " + std::to_string(silence_ms_) + " ms");
  }
  landed(*slot(st.device), *c, st.length);
  return {};
}

wire::Outcome LinkCore::on_done(const wire::Done& d) {
  ProxySlot* s = slot(d.device);
  if (s == nullptr) return violation("done for device " + std::to_string(d.device) + " that the link never registered");
  // acquire: pairs with submit's release of last_submitted.
  const std::uint64_t last = s->last_submitted.load(std::memory_order_acquire);
  if (d.value > last) {
    return violation("done " + std::to_string(d.value) + " of device " + std::to_string(d.device) +
                     " above the last value submitted (" + std::to_string(last) + ")");
  }
  if (!s->copies.empty() && s->copies.front().value <= d.value) {
    const ClientCopy& c = s->copies.front();
    return violation("done " + std::to_string(d.value) + " of device " + std::to_string(d.device) + " while copy part " +
                     std::to_string(c.part) + " of value " + std::to_string(c.value) + " has " +
                     std::to_string(c.landed) + " of " + std::to_string(c.total) + " bytes");
  }
  if (pending_done_.slot != s) publish_pending_done();
  pending_done_.slot = s;
  pending_done_.value = std::max(pending_done_.value, d.value);
  return {};
}

void LinkCore::publish_pending_done() {
  ProxySlot* const s = pending_done_.slot;
  if (s == nullptr) return;
  const std::uint64_t value = pending_done_.value;
  pending_done_ = {};
  // The word of a stopped proxy whose final value is written belongs to the runtime again:
  // drop the report without touching it (the word holds the last value, >= value).
  const std::uint32_t state = s->handshake.enter();  // stop waits until leave()
  const bool stopped = (state & StopHandshake::kStopped) != 0;
  if (stopped && (state & StopHandshake::kClaimed) != 0) {
    s->handshake.leave();
    return;
  }
  if (value <= s->word_ref().load(std::memory_order_relaxed)) {  // passed: dropped
    s->handshake.leave();
    return;
  }
  if (!stopped) {  // a stopped proxy's values ring is freed (stop), and room runs no more
    std::size_t n = 0;
    std::uint64_t cost_end = 0;
    // The values the run completes; the tail is reloaded only when the known ones run out.
    while (s->values.has_items(n + 1) && s->values.at(n).value <= value) {
      cost_end = s->values.at(n++).cost_end;
    }
    if (n > 0) {
      s->values.pop(n);
      // release: pairs with room's acquire.
      s->done_cost.store(cost_end, std::memory_order_release);
    }
  }
  test_hook::at(test_hook::Point::kReceiverPublishing, s->device);
  // Counted before the raise: a thread that sees the word (acquire) sees the count too.
  engine::bump(counters_.word_publishes, 1);
  s->publish(value);
  s->handshake.leave();  // the publish is done before stop, waiting for it, goes on
  s->events.notify();  // only this proxy's waiters, once for the whole run
}

}  // namespace rig::remote
