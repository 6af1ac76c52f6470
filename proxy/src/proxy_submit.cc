// room and submit: the hot path of a proxy.
#include <mimalloc.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "proxy_slot.h"
#include "rig/engine/iov_cursor.h"
#include "rig/engine/packed_rows.h"
#include "rig/remote/proxy.h"
#include "rig/wire/codec.h"

namespace rig::remote {
namespace {

bool contiguous(const rig_copy& c, std::uint64_t pitch) { return c.rows == 1 || pitch == c.row_bytes; }

std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

// The proxy of this link whose word a wait names, if any: the wait's device is the word's
// location address (the agent's device id), so this is one indexed load, not a search.
ProxySlot* link_wait_slot(const Link& link, const rig_wait& w) {
  if (w.device >= wire::kMaxDevices) return nullptr;
  ProxySlot* s = link.slot(static_cast<std::uint32_t>(w.device));
  return s != nullptr && s->word == w.word ? s : nullptr;
}

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
    static_assert(Proxy::kChunkBytes <= engine::StagingPool::kChunkBytes);
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
  const StagingAllocator& alloc;
  engine::Connection& conn;
  void* p = nullptr;
  std::size_t bytes = 0;
};

}  // namespace

int Proxy::room(const rig_submission& s) const {
  if (s.n_parts > wire::kMaxParts || s.n_waits > wire::kMaxWaits) return RIG_NEVER;
  if ((s.n_parts > 0 && s.parts == nullptr) || (s.n_waits > 0 && s.waits == nullptr)) return RIG_NEVER;
  std::uint64_t cost = 0, words = 0;
  bool into_client = false;
  for (std::uint32_t i = 0; i < s.n_parts; ++i) {
    const rig_part& p = s.parts[i];
    if (p.queue > RIG_QUEUE_COPY) return RIG_NEVER;
    if (p.kind == RIG_PART_COPY) {
      const rig_copy& c = p.u.copy;
      const bool src_client = c.src.host != nullptr, dst_client = c.dst.host != nullptr;
      if (src_client && dst_client) return RIG_NEVER;  // both sides here: nothing crosses
      if (!src_client && !link_.owns(c.src.handle)) return RIG_NEVER;  // another link's, or a word
      if (!dst_client && !link_.owns(c.dst.handle)) return RIG_NEVER;
      if (c.rows == 0 || c.row_bytes == 0) return RIG_NEVER;
      if (c.rows > 1 && (c.src_pitch < c.row_bytes || c.dst_pitch < c.row_bytes)) return RIG_NEVER;
      std::uint64_t bytes = 0;
      if (__builtin_mul_overflow(c.rows, c.row_bytes, &bytes) || bytes > wire::kMaxCopyBytes) {
        return RIG_NEVER;
      }
      // submit reads a copy's source bytes before the agent runs an earlier part.
      if (src_client && into_client) return RIG_NEVER;
      into_client = into_client || dst_client;
      cost = sat_add(cost, bytes);
    } else if (p.kind == RIG_PART_WORDS) {
      if (!is_host()) return RIG_NEVER;
      if (p.u.words.n_words > 0 && p.u.words.words == nullptr) return RIG_NEVER;
      words += p.u.words.n_words;
      cost = sat_add(cost, std::uint64_t{p.u.words.n_words} * edge::kWord);
    } else {
      return RIG_NEVER;
    }
  }
  if (words > wire::kMaxWords) return RIG_NEVER;
  // relaxed: submitted_cost is this side's own; acquire: pairs with the receiving thread's
  // release of done_cost.
  const std::uint64_t in_flight = slot_->submitted_cost.load(std::memory_order_relaxed) -
                                  slot_->done_cost.load(std::memory_order_acquire);
  return in_flight > kRoomBytes ? RIG_LATER : RIG_FITS;
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
    if (same_link != nullptr) {
      same_link->events.wait(events, 50'000'000);
    } else if (++spins < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(std::min<std::uint32_t>(spins, 1000)));
    }
  }
}

int Proxy::submit(const rig_submission& s, std::uint64_t value, const char** why) {
  ProxySlot& slot = *slot_;
  // release: pairs with the receiving thread's acquire (done reports above it are violations)
  // and stop's acquire (the last value given to submit, also when this submit fails).
  slot.last_submitted.store(value, std::memory_order_release);
  if (job_->over()) return fail_submit(why, job_->fault_text());

  // Waits: a word of a proxy of this link travels in the handover; any other waits here.
  bool from_client = false;
  std::uint32_t n_link_waits = 0;
  for (std::uint32_t i = 0; i < s.n_parts; ++i) {
    if (s.parts[i].kind == RIG_PART_COPY && s.parts[i].u.copy.src.host != nullptr) from_client = true;
  }
  for (std::uint32_t i = 0; i < s.n_waits; ++i) {
    const rig_wait& w = s.waits[i];
    ProxySlot* ws = link_wait_slot(link_, w);
    if (ws != nullptr) {
      ++n_link_waits;
      if (!from_client) continue;  // the agent waits for it
    }
    // Before a copy from this process's memory, the work it follows must be done here.
    if (!wait_word(w.word, w.value, ws)) return fail_submit(why, job_->fault_text());
  }
  if (from_client) {
    const std::uint64_t last_in = slot.last_client_dst_value.load(std::memory_order_relaxed);
    if (last_in != 0 && !wait_word(word_, last_in, &slot)) return fail_submit(why, job_->fault_text());
  }

  // Staging for strided rows from this process's memory: had (or known to exist) before
  // anything is recorded or sent. Copies striped over the link's data connections need none:
  // their rows go out in place.
  Staging staging(link_.staging(), link_.connection());
  std::uint64_t staging_bytes = 0;
  bool striped = false;
  for (std::uint32_t i = 0; i < s.n_parts; ++i) {
    const rig_part& p = s.parts[i];
    if (p.kind != RIG_PART_COPY || p.u.copy.src.host == nullptr) continue;
    const std::uint64_t total = p.u.copy.rows * p.u.copy.row_bytes;
    if (link_.stripes_copy(total)) {
      striped = true;
    } else if (!contiguous(p.u.copy, p.u.copy.src_pitch)) {
      staging_bytes = std::max(staging_bytes, std::min(kChunkBytes, total));
    }
  }
  if (staging_bytes > 0) {
    if (!staging.get(staging_bytes)) return fail_submit(why, "out of memory for a hand-over");
  }

  // The handover message: header, fixed part, waits, parts, words.
  std::uint32_t n_words = 0, n_into = 0;
  std::uint64_t cost = 0;
  for (std::uint32_t i = 0; i < s.n_parts; ++i) {
    const rig_part& p = s.parts[i];
    if (p.kind == RIG_PART_WORDS) {
      n_words += p.u.words.n_words;
      cost += std::uint64_t{p.u.words.n_words} * edge::kWord;
    } else {
      cost += p.u.copy.rows * p.u.copy.row_bytes;
      if (p.u.copy.dst.host != nullptr) ++n_into;
    }
  }
  const std::size_t body = sizeof(wire::Handover) + std::size_t{n_link_waits} * sizeof(wire::Wait) +
                           std::size_t{s.n_parts} * sizeof(wire::Part) + std::size_t{n_words} * 4;
  try {
    message_.resize(sizeof(wire::FrameHeader) + body);
  } catch (const std::bad_alloc&) {
    return fail_submit(why, "out of memory for a hand-over");
  }
  std::byte* out = message_.data();
  const auto framed = wire::frame(wire::MsgType::kHandover,
                                  wire::Handover{account_.id, n_link_waits, value, s.n_parts, n_words},
                                  body - sizeof(wire::Handover));
  std::memcpy(out, &framed, sizeof framed);
  out += sizeof framed;
  for (std::uint32_t i = 0; i < s.n_waits; ++i) {
    if (ProxySlot* ws = link_wait_slot(link_, s.waits[i])) {
      const wire::Wait w{ws->device, 0, s.waits[i].value};
      std::memcpy(out, &w, sizeof w);
      out += sizeof w;
    }
  }
  for (std::uint32_t i = 0; i < s.n_parts; ++i) {
    const rig_part& p = s.parts[i];
    wire::Part wp{};
    wp.kind = static_cast<std::uint16_t>(p.kind == RIG_PART_COPY ? wire::PartKind::kCopy
                                                                 : wire::PartKind::kWords);
    wp.queue = static_cast<std::uint16_t>(p.queue);
    if (p.kind == RIG_PART_COPY) {
      const rig_copy& c = p.u.copy;
      auto side = [](const rig_side& sd) {
        wire::Side w{};
        w.kind = static_cast<std::uint8_t>(sd.host != nullptr ? wire::SideKind::kClient
                                                               : wire::SideKind::kObject);
        w.handle = sd.host != nullptr ? 0 : sd.handle;
        w.offset = sd.host != nullptr ? 0 : sd.offset;
        return w;
      };
      wp.copy.src = side(c.src);
      wp.copy.dst = side(c.dst);
      wp.copy.rows = c.rows;
      wp.copy.row_bytes = c.row_bytes;
      wp.copy.src_pitch = c.rows > 1 ? c.src_pitch : c.row_bytes;
      wp.copy.dst_pitch = c.rows > 1 ? c.dst_pitch : c.row_bytes;
    } else {
      wp.words.image = p.u.words.image;
      wp.words.function = p.u.words.function;
      wp.words.n_words = p.u.words.n_words;
    }
    std::memcpy(out, &wp, sizeof wp);
    out += sizeof wp;
  }
  for (std::uint32_t i = 0; i < s.n_parts; ++i) {
    const rig_part& p = s.parts[i];
    if (p.kind == RIG_PART_WORDS && p.u.words.n_words > 0) {
      std::memcpy(out, p.u.words.words, std::size_t{p.u.words.n_words} * 4);
      out += std::size_t{p.u.words.n_words} * 4;
    }
  }

  // Record the copies into this process's memory and the value, then publish them to the
  // receiving thread before the message leaves (its reports may come back at once).
  for (;;) {
    const std::uint32_t events = slot.events.current();
    if (slot.copies.free_slots() >= n_into && slot.values.free_slots() >= 1) break;
    if (job_->over()) return fail_submit(why, job_->fault_text());
    slot.events.wait(events, 50'000'000);
  }
  std::size_t k = 0;
  for (std::uint32_t i = 0; i < s.n_parts; ++i) {
    const rig_part& p = s.parts[i];
    if (p.kind != RIG_PART_COPY || p.u.copy.dst.host == nullptr) continue;
    const rig_copy& c = p.u.copy;
    ClientCopy& rec = slot.copies.claim(k++);
    rec.value = value;
    rec.part = i;
    rec.base = static_cast<std::byte*>(c.dst.host);
    rec.rows = c.rows;
    rec.row_bytes = c.row_bytes;
    rec.pitch = c.rows > 1 ? c.dst_pitch : c.row_bytes;
    rec.total = c.rows * c.row_bytes;
    rec.landed = 0;
    if (rec.total >= Link::kZeroCopyBytes) link_.expect_large_copy();
  }
  const std::uint64_t cost_end = slot.submitted_cost.load(std::memory_order_relaxed) + cost;
  slot.values.claim() = SubmittedValue{value, cost_end};
  // relaxed: only room/submit read it; the records' release below orders nothing for it.
  slot.submitted_cost.store(cost_end, std::memory_order_relaxed);
  if (n_into > 0) slot.last_client_dst_value.store(value, std::memory_order_relaxed);
  slot.copies.publish(n_into);  // release: the records are complete
  slot.values.publish(1);

  // Send the handover and, right behind it, the bytes of copies from this process's memory.
  // From here on the agent may hold a handover of this proxy: its account stays taken.
  // release: pairs with register_proxy's acquire.
  slot.handed_over.store(true, std::memory_order_release);
  engine::Connection& conn = link_.connection();
  int rc = 0;
  if (staging_bytes == 0 && !striped) {
    // No rows to pack: the handover and the bytes of its copies from here (in place, rows end
    // to end) go out as one posted message, sent in one system call, possibly together with
    // other threads' messages (the posted message stays whole, in order).
    std::size_t chunks = 0;
    for (std::uint32_t i = 0; i < s.n_parts; ++i) {
      const rig_part& p = s.parts[i];
      if (p.kind == RIG_PART_COPY && p.u.copy.src.host != nullptr) {
        chunks += (p.u.copy.rows * p.u.copy.row_bytes + kChunkBytes - 1) / kChunkBytes;
      }
    }
    try {
      bytes_headers_.clear();
      bytes_headers_.reserve(chunks);  // no reallocation below: the iovecs point into it
      iov_.clear();
      iov_.reserve(1 + 2 * chunks);
    } catch (const std::bad_alloc&) {
      return fail_submit(why, "out of memory for a hand-over");
    }
    iov_.push_back({message_.data(), message_.size()});
    for (std::uint32_t i = 0; i < s.n_parts; ++i) {
      const rig_part& p = s.parts[i];
      if (p.kind != RIG_PART_COPY || p.u.copy.src.host == nullptr) continue;
      const std::uint64_t total = p.u.copy.rows * p.u.copy.row_bytes;
      const auto* src = static_cast<const std::byte*>(p.u.copy.src.host);
      for (std::uint64_t at = 0; at < total; at += kChunkBytes) {
        const auto n = static_cast<std::uint32_t>(std::min(kChunkBytes, total - at));
        bytes_headers_.push_back(
            wire::frame(wire::MsgType::kBytes, wire::Bytes{account_.id, i, value, at, n, 0}, n));
        iov_.push_back(engine::to_iov(&bytes_headers_.back(), sizeof(BytesHeader)));
        iov_.push_back(engine::to_iov(src + at, n));
      }
    }
    rc = conn.send_combined(iov_);
  } else {
    engine::Connection::Hold hold(conn);
    // Ours while we hold the turn; none when every part goes in place (striped, contiguous).
    const engine::StagingPool::Chunk chunk = staging_bytes > 0 ? staging.chunk() : engine::StagingPool::Chunk{};
    const iovec msg{message_.data(), message_.size()};
    rc = conn.send_holding_turn({&msg, 1});
    for (std::uint32_t i = 0; rc == 0 && i < s.n_parts; ++i) {
      const rig_part& p = s.parts[i];
      if (p.kind != RIG_PART_COPY || p.u.copy.src.host == nullptr) continue;
      const rig_copy& c = p.u.copy;
      const std::uint64_t total = c.rows * c.row_bytes;
      if (link_.stripes_copy(total)) {
        rc = link_.send_striped(account_.id, i, value, c.src.host, c.row_bytes,
                                contiguous(c, c.src_pitch) ? c.row_bytes : c.src_pitch, 0, total);
        continue;
      }
      const bool in_place = contiguous(c, c.src_pitch);
      for (std::uint64_t at = 0; rc == 0 && at < total; at += kChunkBytes) {
        const auto n = static_cast<std::uint32_t>(std::min(kChunkBytes, total - at));
        const auto hdr = wire::frame(wire::MsgType::kBytes,
                                     wire::Bytes{account_.id, i, value, at, n, 0}, n);
        const std::byte* src = static_cast<const std::byte*>(c.src.host);
        const void* payload = src + at;
        if (!in_place) {
          // Pack the rows that [at, at + n) of the packed bytes cover.
          engine::pack_rows(chunk.data, src, c.row_bytes, c.src_pitch, at, n);
          engine::bump(conn.counters().bytes_staged, n);
          payload = chunk.data;
        }
        const iovec iov[2] = {engine::to_iov(&hdr, sizeof hdr),
                              engine::to_iov(payload, n)};
        // The chunk goes from its registered buffer if it has one; either send borrows its
        // memory until it returns (after the notification if it went zero-copy).
        rc = in_place ? conn.send_holding_turn(iov) : conn.send_staged({iov, 1}, chunk, n);
      }
    }
  }
  if (rc != 0) {
    job_->fail("link to agent " + link_.endpoint() + ": send failed: " + std::strerror(-rc));
    return fail_submit(why, job_->fault_text());
  }
  return RIG_COMMITTED;
}

}  // namespace rig::remote
