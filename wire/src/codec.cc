#include "rig/wire/codec.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "decode_support.h"

namespace rig::wire {

using namespace decoding;

namespace {

Outcome check_side(const Side& s, const char* which) {
  const auto kind = static_cast<SideKind>(s.kind);
  if (kind != SideKind::kObject && kind != SideKind::kClient) {
    return fail("handover", std::string(which) + " side has unknown kind " +
                                std::to_string(s.kind));
  }
  for (auto r : s.reserved) {
    if (r != 0) return fail("handover", std::string(which) + " side has reserved bytes set");
  }
  if (kind == SideKind::kClient && (s.handle != 0 || s.offset != 0)) {
    return fail("handover",
           std::string(which) + " side in the client's memory carries a handle or offset");
  }
  return {};
}

Outcome check_extent(const Side& s, const CopyPart& c, std::uint64_t pitch, const char* which) {
  if (static_cast<SideKind>(s.kind) != SideKind::kObject) return {};
  std::uint64_t span = 0, end = 0;
  if (!mul_ok(c.rows - 1, pitch, span) || !add_ok(span, c.row_bytes, span) ||
      !add_ok(s.offset, span, end)) {
    return fail("handover", std::string(which) + " range overflows 64 bits");
  }
  return {};
}

}  // namespace

std::size_t fixed_size(MsgType type) {
  switch (type) {
    case MsgType::kHello: return sizeof(Hello);
    case MsgType::kWelcome: return sizeof(Welcome);
    case MsgType::kRequest: return sizeof(Request);
    case MsgType::kAnswer: return sizeof(Answer);
    case MsgType::kRelease: return sizeof(Release);
    case MsgType::kHandover: return sizeof(Handover);
    case MsgType::kBytes: return sizeof(Bytes);
    case MsgType::kDone: return sizeof(Done);
    case MsgType::kFailure: return sizeof(Failure);
    case MsgType::kClose: return sizeof(Close);
    case MsgType::kPing: return sizeof(Ping);
    case MsgType::kStripeGrant: return sizeof(StripeGrant);
    case MsgType::kJoin: return sizeof(Join);
    case MsgType::kStriped: return sizeof(Striped);
    case MsgType::kChallenge: return sizeof(Challenge);
    case MsgType::kProof: return sizeof(Proof);
    case MsgType::kStatusQuery: return sizeof(StatusQuery);
    case MsgType::kStatus: return sizeof(Status);
  }
  return 0;
}

const char* type_name(std::uint16_t type) {
  switch (static_cast<MsgType>(type)) {
    case MsgType::kHello: return "hello";
    case MsgType::kWelcome: return "welcome";
    case MsgType::kRequest: return "request";
    case MsgType::kAnswer: return "answer";
    case MsgType::kRelease: return "release";
    case MsgType::kHandover: return "handover";
    case MsgType::kBytes: return "bytes";
    case MsgType::kDone: return "done";
    case MsgType::kFailure: return "failure";
    case MsgType::kClose: return "close";
    case MsgType::kPing: return "ping";
    case MsgType::kStripeGrant: return "stripe grant";
    case MsgType::kJoin: return "join";
    case MsgType::kStriped: return "striped";
    case MsgType::kChallenge: return "challenge";
    case MsgType::kProof: return "proof";
    case MsgType::kStatusQuery: return "status query";
    case MsgType::kStatus: return "status";
  }
  return "unknown";
}

const char* check_header(const FrameHeader& h) {
  if (h.type == 0 || h.type > kMaxMsgType) return "frame of unknown type";
  if (h.flags != 0) return "frame with flags set (v1 defines none)";
  const auto type = static_cast<MsgType>(h.type);
  if (h.length < fixed_size(type)) return "frame shorter than its message's fixed part";
  if (type == MsgType::kBytes) {
    if (h.length - sizeof(Bytes) > kMaxChunk) return "bytes frame longer than the maximum chunk";
    if (h.length == sizeof(Bytes)) return "bytes frame with no payload";
    return nullptr;
  }
  if (h.length > kMaxControlLength) return "frame longer than the maximum message";
  return nullptr;
}

Outcome decode(std::span<const std::byte> body, RequestView& out) {
  RIG_RETURN_IF_FAILED(read_fixed(body, out.fixed, "request"));
  const Request& r = out.fixed;
  if (r.kind == 0 || r.kind > kMaxRequestKind) {
    return fail("request", "unknown kind " + std::to_string(r.kind));
  }
  if (r.reserved != 0 || r.reserved2 != 0) return fail("request", "reserved fields set");
  if (body.size() != sizeof(Request) + std::size_t{r.tail_length}) {
    return fail("request", "length does not match its tail of " +
                               std::to_string(r.tail_length) + " bytes");
  }
  const auto kind = static_cast<RequestKind>(r.kind);
  switch (kind) {
    case RequestKind::kAlloc:
    case RequestKind::kMapPeer:
      if (r.tail_length != 0) return fail("request", "alloc or map_peer with a tail");
      break;
    case RequestKind::kImage:
      if (r.tail_length == 0 || r.tail_length > kMaxImage) {
        return fail("request", "image binary of " + std::to_string(r.tail_length) +
                                   " bytes outside 1.." + std::to_string(kMaxImage));
      }
      break;
    case RequestKind::kEntry:
    case RequestKind::kPrepare:
      if (r.tail_length == 0 || r.tail_length > kMaxName) {
        return fail("request", "function name of " + std::to_string(r.tail_length) +
                                   " bytes outside 1.." + std::to_string(kMaxName));
      }
      break;
  }
  out.tail = body.subspan(sizeof(Request));
  return {};
}

Outcome decode(std::span<const std::byte> body, AnswerView& out) {
  RIG_RETURN_IF_FAILED(read_fixed(body, out.fixed, "answer"));
  const Answer& a = out.fixed;
  if (a.status > kMaxAnswerStatus) {
    return fail("answer", "unknown status " + std::to_string(a.status));
  }
  if (a.reserved != 0) return fail("answer", "reserved field set");
  if (a.text_length > kMaxText) return fail("answer", "reason text too long");
  if (body.size() != sizeof(Answer) + std::size_t{a.text_length}) {
    return fail("answer", "length does not match its text");
  }
  out.text = {reinterpret_cast<const char*>(body.data()) + sizeof(Answer), a.text_length};
  return {};
}

Outcome decode(std::span<const std::byte> body, Release& out) {
  RIG_RETURN_IF_FAILED(exact(body, out, "release"));
  if (out.kind != static_cast<std::uint16_t>(ReleaseKind::kObject) &&
      out.kind != static_cast<std::uint16_t>(ReleaseKind::kImage)) {
    return fail("release", "unknown kind " + std::to_string(out.kind));
  }
  if (out.reserved != 0 || out.reserved2 != 0) return fail("release", "reserved fields set");
  return {};
}

Outcome check_copy(const CopyPart& c) {
  RIG_RETURN_IF_FAILED(check_side(c.src, "source"));
  RIG_RETURN_IF_FAILED(check_side(c.dst, "destination"));
  if (c.src.kind == static_cast<std::uint8_t>(SideKind::kClient) &&
      c.dst.kind == static_cast<std::uint8_t>(SideKind::kClient)) {
    return fail("handover", "copy with both sides in the client's memory");
  }
  if (c.rows == 0 || c.rows > kMaxRows) return fail("handover", "copy row count out of range");
  if (c.row_bytes == 0) return fail("handover", "copy of empty rows");
  std::uint64_t total = 0;
  if (!mul_ok(c.rows, c.row_bytes, total) || total > kMaxCopyBytes) {
    return fail("handover", "copy larger than the maximum copy");
  }
  if (c.rows > 1 && (c.src_pitch < c.row_bytes || c.dst_pitch < c.row_bytes)) {
    return fail("handover", "copy pitch smaller than its rows (rows overlap)");
  }
  RIG_RETURN_IF_FAILED(check_extent(c.src, c, c.src_pitch, "source"));
  return check_extent(c.dst, c, c.dst_pitch, "destination");
}

Outcome decode(std::span<const std::byte> body, HandoverView& out) {
  // The receiver's own bug, not the peer's: -EFAULT, never a violation.
  if (!aligned(body)) return Outcome::failed(-EFAULT, "handover: body not 8-byte aligned (receiver bug)");
  RIG_RETURN_IF_FAILED(read_fixed(body, out.fixed, "handover"));
  const Handover& h = out.fixed;
  if (h.device >= kMaxDevices) return fail("handover", "device past the maximum");
  if (h.n_waits > kMaxWaits) return fail("handover", "too many waits");
  if (h.n_parts > kMaxParts) return fail("handover", "too many parts");
  if (h.n_words > kMaxWords) return fail("handover", "too many words");
  const std::uint64_t want = handover_body_bytes(h.n_waits, h.n_parts, h.n_words);
  if (body.size() != want) {
    return fail("handover", "length " + std::to_string(body.size()) +
                                " does not match its counts (expected " +
                                std::to_string(want) + ")");
  }
  std::size_t at = sizeof(Handover);
  out.waits = view_of<Wait>(body, at, h.n_waits);
  at += std::size_t{h.n_waits} * sizeof(Wait);
  out.parts = view_of<Part>(body, at, h.n_parts);
  at += std::size_t{h.n_parts} * sizeof(Part);
  out.words = view_of<std::uint32_t>(body, at, h.n_words);
  for (const Wait& w : out.waits) {
    if (w.device >= kMaxDevices) return fail("handover", "wait on a device past the maximum");
    if (w.reserved != 0) return fail("handover", "wait with reserved field set");
  }
  std::uint64_t words = 0;
  for (std::size_t i = 0; i < out.parts.size(); ++i) {
    const Part& p = out.parts[i];
    if (p.queue > 1) return fail("handover", "part " + std::to_string(i) + ": unknown queue");
    if (p.reserved != 0) return fail("handover", "part with reserved field set");
    switch (static_cast<PartKind>(p.kind)) {
      case PartKind::kCopy:
        if (Outcome copy = check_copy(p.copy); !copy.ok()) {
          return Outcome::failed(copy.err(), copy.why() + " (part " + std::to_string(i) + ")");
        }
        break;
      case PartKind::kWords:
        for (auto r : p.words.reserved) {
          if (r != 0) {
            return fail("handover", "part " + std::to_string(i) + ": reserved bytes set");
          }
        }
        words += p.words.n_words;
        break;
      default:
        return fail("handover", "part " + std::to_string(i) + ": unknown kind " +
                                    std::to_string(p.kind));
    }
  }
  if (words != h.n_words) return fail("handover", "words parts do not add up to n_words");
  return {};
}

Outcome decode_bytes(std::span<const std::byte> fixed, std::uint32_t frame_length, Bytes& out) {
  RIG_RETURN_IF_FAILED(exact(fixed, out, "bytes"));
  if (out.length == 0 || out.length > kMaxChunk) return fail("bytes", "payload length out of range");
  if (std::size_t{frame_length} != sizeof(Bytes) + std::size_t{out.length}) {
    return fail("bytes", "frame length does not match the payload length");
  }
  if (out.reserved != 0) return fail("bytes", "reserved field set");
  std::uint64_t end = 0;
  if (!add_ok(out.offset, out.length, end)) return fail("bytes", "offset overflows");
  return {};
}

Outcome decode(std::span<const std::byte> body, Done& out) {
  RIG_RETURN_IF_FAILED(exact(body, out, "done"));
  if (out.reserved != 0) return fail("done", "reserved field set");
  return {};
}

Outcome decode(std::span<const std::byte> body, FailureView& out) {
  RIG_RETURN_IF_FAILED(read_fixed(body, out.fixed, "failure"));
  if (out.fixed.text_length > kMaxText) return fail("failure", "reason text too long");
  if (body.size() != sizeof(Failure) + std::size_t{out.fixed.text_length}) {
    return fail("failure", "length does not match its text");
  }
  out.text = {reinterpret_cast<const char*>(body.data()) + sizeof(Failure),
              out.fixed.text_length};
  return {};
}

Outcome decode(std::span<const std::byte> body, Close& out) {
  RIG_RETURN_IF_FAILED(exact(body, out, "close"));
  if (out.reserved != 0) return fail("close", "reserved field set");
  return {};
}

Outcome decode(std::span<const std::byte> body, Striped& out) {
  RIG_RETURN_IF_FAILED(exact(body, out, "striped"));
  if (out.length == 0) return fail("striped", "length 0");
  if (out.piece == 0 || out.piece > kMaxChunk) return fail("striped", "piece size out of range");
  if (stripe_pieces(out) > kMaxStripes) return fail("striped", "more pieces than the maximum stripes");
  std::uint64_t end = 0;
  if (!add_ok(out.offset, out.length, end)) return fail("striped", "offset overflows");
  return {};
}

Outcome decode(std::span<const std::byte> body, Ping& out) {
  return exact(body, out, "ping");
}

Outcome decode(std::span<const std::byte> body, StatusQuery& out) {
  RIG_RETURN_IF_FAILED(exact(body, out, "status query"));
  if (out.id == 0) return fail("status query", "id 0");
  if (out.reserved != 0) return fail("status query", "reserved field set");
  return {};
}

Framed<StatusQuery> encode_status_query(std::uint64_t id) {
  return encode(StatusQuery{id, 0});
}

Outcome decode(std::span<const std::byte> body, StatusView& out) {
  RIG_RETURN_IF_FAILED(read_fixed(body, out.fixed, "status"));
  if (out.fixed.id == 0) return fail("status", "id 0");
  if (out.fixed.reserved != 0) return fail("status", "reserved field set");
  if (out.fixed.text_length == 0) return fail("status", "empty text");
  if (out.fixed.text_length > kMaxStatusText) {
    return fail("status", "text of " + std::to_string(out.fixed.text_length) + " bytes, longer than " +
                              std::to_string(kMaxStatusText));
  }
  if (body.size() != sizeof(Status) + std::size_t{out.fixed.text_length}) {
    return fail("status", "length does not match its text");
  }
  out.text = {reinterpret_cast<const char*>(body.data()) + sizeof(Status), out.fixed.text_length};
  return {};
}

Outcome encode_status(std::uint64_t id, std::string_view text, Framed<Status>& out) {
  // The caller's own mistake, not a peer's: -EINVAL.
  if (id == 0) return Outcome::failed(-EINVAL, "status: id 0");
  if (text.empty() || text.size() > kMaxStatusText) {
    return Outcome::failed(-EINVAL, "status: text of " + std::to_string(text.size()) +
                                        " bytes outside 1.." + std::to_string(kMaxStatusText));
  }
  out = encode(Status{id, static_cast<std::uint32_t>(text.size()), 0});
  return {};
}

}  // namespace rig::wire
