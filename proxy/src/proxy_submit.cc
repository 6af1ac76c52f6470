// room and submit: the hot path of a proxy.
#include <mimalloc.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "proxy_slot.h"
#include "rig/engine/connection.h"
#include "rig/engine/copy_bytes.h"
#include "rig/engine/iov_cursor.h"
#include "rig/remote/proxy.h"
#include "rig/wire/codec.h"
#include "rig/wire/limits.h"
#include "submission.h"
#include "test_hook.h"

namespace rig::remote {
namespace {

bool contiguous(const rig_copy& c, std::uint64_t pitch) { return c.rows == 1 || pitch == c.row_bytes; }

// A copy from this process's memory as the link sends it: its rows (end to end when it is one
// row or its pitch is the row) and its part.
engine::CopyRows rows_of(const rig_copy& c) {
  return {c.src.host, c.row_bytes, contiguous(c, c.src_pitch) ? c.row_bytes : c.src_pitch};
}
engine::CopyPart part_of(std::uint32_t device, std::uint32_t part, std::uint64_t value, const rig_copy& c) {
  return {device, part, value, c.rows * c.row_bytes};
}

wire::Side wire_side(const rig_side& sd) {
  wire::Side w{};
  w.kind = static_cast<std::uint8_t>(sd.host != nullptr ? wire::SideKind::kClient : wire::SideKind::kObject);
  w.handle = sd.host != nullptr ? 0 : sd.handle;
  w.offset = sd.host != nullptr ? 0 : sd.offset;
  return w;
}

// A part as the handover carries it.
wire::Part wire_part(const rig_part& p) {
  wire::Part wp{};
  wp.kind = static_cast<std::uint16_t>(p.kind == RIG_PART_COPY ? wire::PartKind::kCopy : wire::PartKind::kWords);
  wp.queue = static_cast<std::uint16_t>(p.queue);
  if (p.kind == RIG_PART_COPY) {
    const rig_copy& c = p.u.copy;
    wp.copy.src = wire_side(c.src);
    wp.copy.dst = wire_side(c.dst);
    wp.copy.rows = c.rows;
    wp.copy.row_bytes = c.row_bytes;
    wp.copy.src_pitch = c.rows > 1 ? c.src_pitch : c.row_bytes;
    wp.copy.dst_pitch = c.rows > 1 ? c.dst_pitch : c.row_bytes;
  } else {
    wp.words.image = p.u.words.image;
    wp.words.function = p.u.words.function;
    wp.words.n_words = p.u.words.n_words;
  }
  return wp;
}

}  // namespace

// Where strided rows from this process's memory are packed: the connection's staging pool
// (chunks allocated once and reused; registered buffers when memlock allows), or, when the
// link has a StagingAllocator, memory from it for this call, freed on every path out of submit.
struct Staging {
  Staging(const StagingAllocator& a, engine::Connection& c) : alloc(a), conn(c) {}
  ~Staging() {
    if (p != nullptr) (alloc.release != nullptr ? alloc.release : mi_free)(p);
  }
  // Before the turn: makes sure there is memory for `n` bytes (at most a chunk). false: none.
  bool get(std::size_t n) {
    wanted_ = true;
    if (alloc.allocate == nullptr) return conn.staging().prepare(conn.counters()) == 0;
    p = alloc.allocate(n);
    bytes = n;
    return p != nullptr;
  }
  // Holding the turn (which orders the pool's chunks): the memory to pack into.
  engine::StagingPool::Chunk chunk() {
    if (p != nullptr) return {static_cast<std::byte*>(p), bytes, -1};
    return conn.staging().chunk(0, conn.socket(), conn.counters());
  }
  bool wanted() const { return wanted_; }
  const StagingAllocator& alloc;
  engine::Connection& conn;
  void* p = nullptr;
  std::size_t bytes = 0;
  bool wanted_ = false;
};

int Proxy::fail_internally(const char** why, const char* what) noexcept {
  try {
    return fail_submit(why, std::string("internal error in submit: ") + what);
  } catch (...) {  // no memory even for the reason
    if (why != nullptr) *why = "internal error in submit (out of memory)";
    return RIG_FAILED;
  }
}

int Proxy::fail_submit(const char** why, std::string text) {
  why_ = std::move(text);
  if (why != nullptr) *why = why_.c_str();
  return RIG_FAILED;
}

// Waits until `word` reaches `value`. A word of this link's proxies wakes on the link's events;
// any other word is polled with backoff. Returns false once the job is over.
bool Proxy::wait_word(const std::uint64_t* word, std::uint64_t value, ProxySlot* same_link) {
  auto ref = std::atomic_ref<std::uint64_t>(*const_cast<std::uint64_t*>(word));
  std::uint32_t spins = 0;
  for (;;) {
    const std::uint32_t events = same_link != nullptr ? same_link->events.current() : 0;
    // acquire: pairs with the release store of whoever advances that word.
    if (ref.load(std::memory_order_acquire) >= value) return true;
    if (job_->over()) return false;
    test_hook::at(test_hook::Point::kSubmitWaitsHere, account_.id);
    if (same_link != nullptr) {
      same_link->events.wait(events, 50'000'000);
    } else if (++spins < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(std::min<std::uint32_t>(spins, 1000)));
    }
  }
}

namespace {

// One pass over the parts: what the steps below need (SubmitPlan).
SubmitPlan plan_submission(const LinkCore& link, const rig_submission& s) {
  SubmitPlan plan;
  plan.travelling.merge(link, s);
  for (std::uint32_t i = 0; i < s.n_parts; ++i) {
    const rig_part& p = s.parts[i];
    if (!part_sent(p)) continue;
    ++plan.n_parts;
    if (p.kind == RIG_PART_WORDS) {
      plan.n_words += p.u.words.n_words;
      plan.cost += std::uint64_t{p.u.words.n_words} * edge::kWord;
      continue;
    }
    const std::uint64_t total = p.u.copy.rows * p.u.copy.row_bytes;
    plan.cost += total;
    if (p.u.copy.dst.host != nullptr) ++plan.n_into;
    if (p.u.copy.src.host == nullptr) continue;
    // Its bytes follow the handover (engine::CopyBytes chooses): in chunks, in place, packed
    // through staging memory (had, or known to exist, before anything is recorded or sent), or
    // striped over the link's data connections (their rows go out in place).
    plan.from_client = true;
    plan.chunks += wire::chunk_count(total);
    const engine::CopyWay way = engine::CopyBytes::way(link.stripes(), part_of(0, 0, 0, p.u.copy), rows_of(p.u.copy), true);
    if (way == engine::CopyWay::kStriped) {
      plan.striped = true;
    } else if (way == engine::CopyWay::kPacked) {
      plan.staging_bytes = std::max(plan.staging_bytes, std::min(wire::kChunkBytes, total));
    }
  }
  return plan;
}

}  // namespace

// Before a submission with a copy from this process's memory, the work it follows must be done
// here: every wait's word (travelling ones at their merged value) and this proxy's last value
// with a copy into this process's memory. Other waits that stay here are waited for in any case.
// Returns false once the job is over.
bool Proxy::wait_here(const rig_submission& s, const SubmitPlan& plan) {
  for (std::uint32_t i = 0; i < s.n_waits; ++i) {
    const rig_wait& w = s.waits[i];
    if (link_wait_slot(link_, w) == nullptr && !wait_word(w.word, w.value, nullptr)) return false;
  }
  if (!plan.from_client) return true;  // the agent waits for the travelling ones
  const TravellingWaits& t = plan.travelling;
  for (std::uint64_t m = t.devices; m != 0; m &= m - 1) {
    ProxySlot* ws = link_.slot(static_cast<std::uint32_t>(std::countr_zero(m)));
    if (!wait_word(ws->word, t.value[ws->device], ws)) return false;
  }
  // relaxed: written only by this proxy's submit, which runs one at a time.
  const std::uint64_t last_in = slot_->last_client_dst_value.load(std::memory_order_relaxed);
  return last_in == 0 || wait_word(word_, last_in, slot_);
}

// The handover message into the scratch, in one pass over the parts: header, fixed part, waits,
// parts (those sent), words. false: no memory for it.
bool Proxy::encode(const rig_submission& s, std::uint64_t value, const SubmitPlan& plan) {
  const TravellingWaits& t = plan.travelling;
  const wire::Handover h{account_.id, t.count(), value, plan.n_parts, plan.n_words};
  try {
    scratch_->message.resize(wire::HandoverWriter::frame_bytes(h));
  } catch (const std::bad_alloc&) {
    return false;
  }
  wire::HandoverWriter out(scratch_->message.data(), h);
  for (std::uint64_t m = t.devices; m != 0; m &= m - 1) {
    const auto d = static_cast<std::uint32_t>(std::countr_zero(m));
    out.wait(wire::Wait{d, 0, t.value[d]});
  }
  each_sent_part(s, [&out](const rig_part& p, std::uint32_t) {
    out.part(wire_part(p));
    if (p.kind == RIG_PART_WORDS) out.words(p.u.words.words, p.u.words.n_words);
    return true;
  });
  assert(out.complete());
  return true;
}

// Waits until the rings have room for `n_into` copy records and one value. false once the job
// is over.
bool Proxy::wait_for_records(std::uint32_t n_into) {
  assert(n_into <= ProxySlot::kCopyRecords);  // room says RIG_NEVER past it; submit refuses it
  ProxySlot& slot = *slot_;
  for (;;) {
    const std::uint32_t events = slot.events.current();
    if (slot.copies.has_room(n_into) && slot.values.has_room(1)) return true;
    if (job_->over()) return false;
    slot.events.wait(events, 50'000'000);
  }
}

// Records the copies into this process's memory (by their part's index on the wire) and the
// value, and publishes them to the receiving thread, before the message leaves (its reports may
// come back at once). false once the job is over while it waits for ring room.
bool Proxy::record(const rig_submission& s, std::uint64_t value, const SubmitPlan& plan) {
  ProxySlot& slot = *slot_;
  if (!wait_for_records(plan.n_into)) return false;
  std::size_t k = 0;
  const auto record_copy = [&](const rig_part& p, std::uint32_t part) {
    if (p.kind != RIG_PART_COPY || p.u.copy.dst.host == nullptr) return true;
    const rig_copy& c = p.u.copy;
    ClientCopy& rec = slot.copies.claim(k++);
    rec = ClientCopy{value, part, static_cast<std::byte*>(c.dst.host), c.rows, c.row_bytes,
                     c.rows > 1 ? c.dst_pitch : c.row_bytes, c.rows * c.row_bytes, 0};
    if (rec.total >= LinkCore::kZeroCopyBytes) link_.expect_large_copy();
    return k < plan.n_into;  // none after the last
  };
  if (plan.n_into > 0) each_sent_part(s, record_copy);
  const std::uint64_t cost_end = slot.submitted_cost.load(std::memory_order_relaxed) + plan.cost;
  slot.values.claim() = SubmittedValue{value, cost_end};
  // relaxed: only room/submit read it; the records' release below orders nothing for it.
  slot.submitted_cost.store(cost_end, std::memory_order_relaxed);
  if (plan.n_into > 0) slot.last_client_dst_value.store(value, std::memory_order_relaxed);
  slot.copies.publish(plan.n_into);  // release: the records are complete
  slot.values.publish(1);
  return true;
}

int Proxy::submit(const rig_submission& s, std::uint64_t value, const char** why) {
  // release: pairs with the receiving thread's acquire (done reports above it are violations)
  // and stop's acquire (the last value given to submit, also when this submit fails).
  slot_->last_submitted.store(value, std::memory_order_release);
  if (job_->over()) return fail_submit(why, job_->fault_text());
  const SubmitPlan plan = plan_submission(link_, s);
  // What room calls RIG_NEVER: its records could never all fit, so it would wait for ever.
  if (plan.n_into > kMaxCopiesIntoHere) return fail_submit(why, "more copies into this process's memory than a handover can hold");
  if (!wait_here(s, plan)) return fail_submit(why, job_->fault_text());
  Staging staging(link_.staging(), link_.connection());
  if (plan.staging_bytes > 0 && !staging.get(plan.staging_bytes)) return fail_submit(why, "out of memory for a hand-over");
  if (!encode(s, value, plan) || (plan.posted() && !reserve_posted(plan))) {
    return fail_submit(why, "out of memory for a hand-over");
  }
  if (!record(s, value, plan)) return fail_submit(why, job_->fault_text());

  // From here on the agent may hold a handover of this proxy: its account stays taken.
  // release: pairs with register_proxy's acquire.
  slot_->handed_over.store(true, std::memory_order_release);
  try {
    const int rc = plan.posted() ? send_posted(s, value) : send_holding(s, value, staging);
    if (rc != 0) {
      link_.fail_send(rc);
      return fail_submit(why, job_->fault_text());
    }
  } catch (const std::exception& e) {
    // The handover is recorded (its copies' records, its value): a submit that ended by an
    // exception without the job failing would leave them waiting for bytes and a report that
    // never come, so a later submit could wait for ever on its own copy into here.
    job_->fail_noexcept({"a hand-over was recorded and not sent: ", e.what()});
    return fail_submit(why, job_->fault_text());
  } catch (...) {
    job_->fail_noexcept({"a hand-over was recorded and not sent: an unknown exception"});
    return fail_submit(why, job_->fault_text());
  }
  return RIG_COMMITTED;
}

// Reserves what send_posted needs (a bytes header per chunk of each copy from here), so that
// it allocates nothing once the handover is recorded. false: no memory.
bool Proxy::reserve_posted(const SubmitPlan& plan) {
  try {
    SubmitScratch& sc = *scratch_;
    sc.bytes_headers.clear();
    sc.bytes_headers.reserve(plan.chunks);  // no reallocation below: the iovecs point into it
    sc.iov.clear();
    sc.iov.reserve(1 + 2 * plan.chunks);
    sc.copy_bytes.reserve(2);  // a chunk's header and its rows, end to end
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

// No rows to pack: the handover and the bytes of its copies from here (in place, rows end to
// end) go out as one posted message, sent in one system call, possibly together with other
// threads' messages (the posted message stays whole, in order). 0 or -errno.
int Proxy::send_posted(const rig_submission& s, std::uint64_t value) {
  SubmitScratch& sc = *scratch_;
  sc.iov.push_back({sc.message.data(), sc.message.size()});
  each_sent_part(s, [&](const rig_part& p, std::uint32_t part) {
    if (p.kind != RIG_PART_COPY || p.u.copy.src.host == nullptr) return true;
    const engine::CopyPart cp = part_of(account_.id, part, value, p.u.copy);
    // In place, its rows end to end (the plan packs nothing and stripes nothing here): the
    // header kept for the posted send, then the payload's one iovec.
    const auto each = [&](const auto& hdr, std::span<const iovec> frame, std::uint32_t) {
      assert(frame.size() == 2);
      sc.bytes_headers.push_back(hdr);
      sc.iov.push_back(engine::to_iov(&sc.bytes_headers.back(), sizeof(SubmitScratch::BytesHeader)));
      sc.iov.push_back(frame[1]);
      return 0;
    };
    return sc.copy_bytes.frames(engine::CopyWay::kInPlace, cp, rows_of(p.u.copy), 0, cp.whole, nullptr, nullptr,
                                each) == 0;
  });
  return link_.connection().send_combined(sc.iov);
}

// Rows to pack or copies to stripe: the handover, then each copy's bytes, holding the turn.
// 0 or -errno.
int Proxy::send_holding(const rig_submission& s, std::uint64_t value, Staging& staging) {
  engine::Connection& conn = link_.connection();
  engine::Connection::Hold hold(conn);
  // Ours while we hold the turn; none when every part goes in place (striped, contiguous).
  const engine::StagingPool::Chunk chunk = staging.wanted() ? staging.chunk() : engine::StagingPool::Chunk{};
  const iovec msg{scratch_->message.data(), scratch_->message.size()};
  int rc = conn.send_holding_turn({&msg, 1});
  each_sent_part(s, [&](const rig_part& p, std::uint32_t part) {
    if (rc != 0) return false;
    if (p.kind != RIG_PART_COPY || p.u.copy.src.host == nullptr) return true;
    const engine::CopyPart cp = part_of(account_.id, part, value, p.u.copy);
    const engine::CopyRows rows = rows_of(p.u.copy);
    const engine::CopyWay way = engine::CopyBytes::way(link_.stripes(), cp, rows, chunk.data != nullptr);
    if (way == engine::CopyWay::kStriped) {
      rc = engine::CopyBytes::striped(*link_.stripes(), conn, cp, rows, 0, cp.whole);
      return true;
    }
    // A packed chunk goes from its registered buffer if it has one; either send borrows its
    // memory until it returns (after the notification if it went zero-copy).
    const auto each = [&](const auto&, std::span<const iovec> frame, std::uint32_t n) {
      return way == engine::CopyWay::kPacked ? conn.send_staged(frame.first(1), chunk, n) : conn.send_holding_turn(frame);
    };
    rc = scratch_->copy_bytes.frames(way, cp, rows, 0, cp.whole, chunk.data, &conn.counters(), each);
    return true;
  });
  return rc;
}

}  // namespace rig::remote
