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

wire::Outcome Incoming::receive(PendingHandover& ho, Start start) {
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
      p.staged = staging_.take(total, p.staged_capacity);
      if (!p.staged) {  // the job's staging limit, the agent's host memory, or RAM
        return wire::Outcome::failed(-ENOMEM, staging_.refusal(total, "of a hand-over"));
      }
      engine::bump(counters_.bytes_staged, total);
    }
    // Straight into the destination's rows, or end to end into staging.
    const Rows into{p.landed ? p.dst.memory->host() + p.dst.offset : p.staged.get(), c.row_bytes,
                    p.landed ? p.dst_place().pitch : c.row_bytes};
    RIG_RETURN_IF_FAILED(receive_part(ho, i, into, p.streams));
    p.landed = p.landed || p.streams;  // all of it issued: the executor issues nothing more for it
  }
  return {};
}

wire::Outcome Incoming::stream(PendingHandover& ho, std::uint32_t index, std::uint64_t got) {
  PendingPart& p = ho.parts[index];
  const Shape shape = p.shape();
  assert(got >= p.streamed && got <= shape.rows * shape.row_bytes);
  if (got < shape.rows * shape.row_bytes && got - p.streamed < kStreamBytes) return {};
  const PackedRange r = packed_range(shape, p.dst_place(), p.streamed, got);
  if (r.empty()) return {};
  DeviceBackend& d = *devices_[ho.device];
  RIG_RETURN_IF_FAILED(device_fault(d, d.copy_in(r.place, p.staged.get() + p.streamed, r.shape)));
  bytes_streamed_ += r.end - p.streamed;
  p.streamed = r.end;
  return {};
}

wire::Outcome Incoming::receive_part(PendingHandover& ho, std::uint32_t index, const Rows& into, bool streams) {
  Expected next{ho.device, ho.value, index, 0, wire::packed_bytes(ho.parts[index].part.copy)};
  while (next.got < next.total) {
    wire::FrameHeader fh{};
    const wire::Outcome got = reader_.next(fh, /*within_message=*/true);
    if (!got.ok()) return got.err() == -EPROTO ? got : lost(got.err());
    if (fh.type == static_cast<std::uint16_t>(wire::MsgType::kStriped)) {
      std::uint64_t length = 0;
      RIG_RETURN_IF_FAILED(receive_striped(fh, next, into, length));
      next.got += length;
      if (streams) RIG_RETURN_IF_FAILED(stream(ho, index, next.got));
      continue;
    }
    if (fh.type != static_cast<std::uint16_t>(wire::MsgType::kBytes)) {
      return wire::violation(std::string("expected the bytes of part ") + std::to_string(index) + ", got " +
                             wire::type_name(fh.type));
    }
    std::span<const std::byte> fixed;
    wire::Bytes b{};
    if (const int rc = reader_.body(sizeof(wire::Bytes), fixed); rc != 0) return lost(rc);
    RIG_RETURN_IF_FAILED(wire::decode_bytes(fixed, fh.length, b));
    RIG_RETURN_IF_FAILED(next.continued_by("bytes", b.device, b.value, b.part, b.offset, b.length));
    recv_iov_.clear();
    engine::append_rows(recv_iov_, into.base, into.row_bytes, into.pitch, next.got, b.length);
    if (const int r = reader_.payload(recv_iov_); r != 0) return lost(r);
    next.got += b.length;
    if (streams) RIG_RETURN_IF_FAILED(stream(ho, index, next.got));
  }
  return {};
}

wire::Outcome Incoming::receive_striped(const wire::FrameHeader& fh, const Expected& next, const Rows& into,
                                        std::uint64_t& length) {
  std::span<const std::byte> body;
  if (const int r = reader_.body(fh.length, body); r != 0) return lost(r);
  wire::Striped st{};
  RIG_RETURN_IF_FAILED(wire::decode(body, st));
  if (!stripes_.granted()) return wire::violation("striped bytes in a job that was granted no stripes");
  if (!stripes_.ready()) return wire::violation("striped bytes before all of the job's stripes joined");
  RIG_RETURN_IF_FAILED(next.continued_by("striped bytes", st.device, st.value, st.part, st.offset, st.length));
  if (wire::Outcome got = stripes_.set().recv_striped(st, into.base, into.row_bytes, into.pitch); !got.ok()) {
    if (got.err() == -ETIMEDOUT) {
      return wire::Outcome::failed(-ETIMEDOUT, "the client sent nothing on its stripes for " +
                                                   std::to_string(silence_ms_) + " ms");
    }
    if (got.err() == -EPROTO || got.err() == -ENOMEM) return got;
    return wire::Outcome::failed(got.err(), "a stripe was lost in a handover's bytes");
  }
  length = st.length;
  return {};
}

wire::Outcome Incoming::lost(int rc) const {
  if (rc != -ETIMEDOUT) return wire::Outcome::failed(rc, "connection lost in a handover's bytes");
  if (engine::tcp_gave_up(reader_.fd())) return wire::Outcome::failed(rc, engine::kTcpGaveUp);  // no silence
  return wire::Outcome::failed(rc, "the client sent nothing for " + std::to_string(silence_ms_) +
                                       " ms inside a handover's bytes");
}

wire::Outcome Incoming::Expected::continued_by(const char* what, std::uint32_t d, std::uint64_t v, std::uint32_t pt,
                                               std::uint64_t offset, std::uint64_t length) const {
  if (d == device && v == value && pt == part && offset == got && length <= total - got) return {};
  return wire::violation(std::string(what) + " (device " + std::to_string(d) + ", value " + std::to_string(v) +
                         ", part " + std::to_string(pt) + ", offset " + std::to_string(offset) + ", length " +
                         std::to_string(length) + ") do not continue part " + std::to_string(part) +
                         " at offset " + std::to_string(got) + " of " + std::to_string(total));
}

}  // namespace rig::agent
