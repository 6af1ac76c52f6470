#include "exec/incoming.h"

#include <cassert>
#include <cerrno>

#include "exec/stream_range.h"
#include "rig/engine/packed_rows.h"
#include "rig/engine/tcp.h"

namespace rig::agent {

bool Incoming::in_place(const PendingHandover& ho, std::size_t index) {
  // Memory only the device's copies reach cannot be received into.
  return ho.parts[index].dst.memory->host() != nullptr && leaves_alone(ho, index);
}

bool Incoming::leaves_alone(const PendingHandover& ho, std::size_t index) {
  const PendingPart& p = ho.parts[index];
  for (std::size_t j = 0; j < index; ++j) {
    const PendingPart& e = ho.parts[j];
    if (!e.is_copy() || e.src.memory == p.dst.memory || e.dst.memory == p.dst.memory) return false;
  }
  return true;
}

bool Incoming::receive(PendingHandover& ho, Start start, std::string& why) {
  for (std::uint32_t i = 0; i < ho.parts.size(); ++i) {
    PendingPart& p = ho.parts[i];
    if (!p.is_copy() || !p.src.client) continue;
    const wire::CopyPart& c = p.part.copy;
    const std::uint64_t total = wire::packed_bytes(c);
    p.landed = start.runs_at_once && in_place(ho, i);
    // Staged for memory only the device reaches, copied there as the bytes come: nothing of the
    // device's is queued ahead of the handover, and nothing earlier in the handover touches the
    // destination, so its stream holds these copies behind the work already issued to it, and
    // the handover's later parts follow them.
    p.streams = start.issues_at_once && !p.landed && total > kStreamBytes && p.dst.memory->host() == nullptr &&
                leaves_alone(ho, i);
    if (!p.landed) {
      if (!staging_.admits(total)) {
        why = staging_.refusal(total, "of a hand-over");
        return false;
      }
      p.staged = staging_.take(total, p.staged_capacity);
      if (!p.staged) {
        why = staging_.refusal(total, "of a hand-over");  // the agent's host memory, or RAM
        return false;
      }
      engine::bump(counters_.bytes_staged, total);
    }
    // Straight into the destination's rows, or end to end into staging.
    const Rows into{p.landed ? p.dst.memory->host() + p.dst.offset : p.staged.get(), c.row_bytes,
                    p.landed ? p.dst_place().pitch : c.row_bytes};
    if (!receive_part(ho, i, into, p.streams, why)) return false;
    p.landed = p.landed || p.streams;  // all of it issued: the executor issues nothing more for it
  }
  return true;
}

bool Incoming::stream(PendingHandover& ho, std::uint32_t index, std::uint64_t got, std::string& why) {
  PendingPart& p = ho.parts[index];
  const Shape shape = p.shape();
  assert(got >= p.streamed && got <= shape.rows * shape.row_bytes);
  if (got < shape.rows * shape.row_bytes && got - p.streamed < kStreamBytes) return true;
  const PackedRange r = packed_range(shape, p.dst_place(), p.streamed, got);
  if (r.empty()) return true;
  DeviceBackend& d = *devices_[ho.device];
  if (!d.copy_in(r.place, p.staged.get() + p.streamed, r.shape, why)) {
    why = device_fault(d, why);
    return false;
  }
  bytes_streamed_ += r.end - p.streamed;
  p.streamed = r.end;
  return true;
}

bool Incoming::receive_part(PendingHandover& ho, std::uint32_t index, const Rows& into, bool streams,
                            std::string& why) {
  Expected next{ho.device, ho.value, index, 0, wire::packed_bytes(ho.parts[index].part.copy)};
  while (next.got < next.total) {
    wire::FrameHeader fh{};
    const wire::Outcome got = reader_.next(fh, /*within_message=*/true);
    if (!got.ok()) {
      why = got.err() == -EPROTO ? got.why() : lost(got.err());
      return false;
    }
    if (fh.type == static_cast<std::uint16_t>(wire::MsgType::kStriped)) {
      std::uint64_t length = 0;
      if (!receive_striped(fh, next, into, length, why)) return false;
      next.got += length;
      if (streams && !stream(ho, index, next.got, why)) return false;
      continue;
    }
    if (fh.type != static_cast<std::uint16_t>(wire::MsgType::kBytes)) {
      why = std::string("expected the bytes of part ") + std::to_string(index) + ", got " + wire::type_name(fh.type);
      return false;
    }
    std::span<const std::byte> fixed;
    wire::Bytes b{};
    if (const int rc = reader_.body(sizeof(wire::Bytes), fixed); rc != 0) {
      why = lost(rc);
      return false;
    }
    if (!wire::passed(wire::decode_bytes(fixed, fh.length, b), why)) return false;
    if (!next.continued_by("bytes", b.device, b.value, b.part, b.offset, b.length, why)) return false;
    recv_iov_.clear();
    engine::append_rows(recv_iov_, into.base, into.row_bytes, into.pitch, next.got, b.length);
    if (const int r = reader_.payload(recv_iov_); r != 0) {
      why = lost(r);
      return false;
    }
    next.got += b.length;
    if (streams && !stream(ho, index, next.got, why)) return false;
  }
  return true;
}

bool Incoming::receive_striped(const wire::FrameHeader& fh, const Expected& next, const Rows& into,
                               std::uint64_t& length, std::string& why) {
  std::span<const std::byte> body;
  if (const int r = reader_.body(fh.length, body); r != 0) {
    why = lost(r);
    return false;
  }
  wire::Striped st{};
  if (!wire::passed(wire::decode(body, st), why)) return false;
  if (!stripes_.granted()) {
    why = "striped bytes in a job that was granted no stripes";
    return false;
  }
  if (!stripes_.ready()) {
    why = "striped bytes before all of the job's stripes joined";
    return false;
  }
  if (!next.continued_by("striped bytes", st.device, st.value, st.part, st.offset, st.length, why)) return false;
  if (const wire::Outcome got = stripes_.set().recv_striped(st, into.base, into.row_bytes, into.pitch); !got.ok()) {
    if (got.err() == -ETIMEDOUT) why = "the client sent nothing on its stripes for " + std::to_string(silence_ms_) + " ms";
    else if (got.err() == -EPROTO || got.err() == -ENOMEM) why = got.why();
    else why = "a stripe was lost in a handover's bytes";
    return false;
  }
  length = st.length;
  return true;
}

std::string Incoming::lost(int rc) const {
  if (rc != -ETIMEDOUT) return "connection lost in a handover's bytes";
  if (engine::tcp_gave_up(reader_.fd())) return engine::kTcpGaveUp;  // the kernel's, no silence
  return "the client sent nothing for " + std::to_string(silence_ms_) + " ms inside a handover's bytes";
}

bool Incoming::Expected::continued_by(const char* what, std::uint32_t d, std::uint64_t v, std::uint32_t pt,
                                      std::uint64_t offset, std::uint64_t length, std::string& why) const {
  if (d == device && v == value && pt == part && offset == got && length <= total - got) return true;
  why = std::string(what) + " (device " + std::to_string(d) + ", value " + std::to_string(v) + ", part " +
        std::to_string(pt) + ", offset " + std::to_string(offset) + ", length " + std::to_string(length) +
        ") do not continue part " + std::to_string(part) + " at offset " + std::to_string(got) + " of " +
        std::to_string(total);
  return false;
}

}  // namespace rig::agent
