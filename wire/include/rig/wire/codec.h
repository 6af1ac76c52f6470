// Encoding and strict decoding of protocol v1 messages. No I/O here.
//
// Decoding: a receiver first checks the 8-byte header (check_header), which bounds the body
// before anything is read; then, for every type but kBytes, reads the whole body into 8-byte
// aligned memory and decodes it into a view whose spans point into that memory. Every decoder
// checks every length, count and field it can check without state, and on failure returns an
// Outcome of -EPROTO whose reason names the message and the field. Nothing is read out of bounds.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "rig/export.h"
#include "rig/wire/frame_header.h"
#include "rig/wire/messages.h"
#include "rig/wire/outcome.h"

namespace rig::wire {

// The fixed part of each type: a body shorter than this is malformed.
std::size_t fixed_size(MsgType type);
const char* type_name(std::uint16_t type);

// Checks a header just read: known type, flags 0, length within the type's bounds.
// Returns nullptr when it is acceptable, otherwise a static reason.
const char* check_header(const FrameHeader& header);

// A header and a fixed part laid end to end, ready to send (the tail goes in its own iovec).
template <class M>
struct Framed {
  FrameHeader header;
  M msg;
};

// Any header with any fixed part: the encoders' building block, and a test's way to send a
// frame whose header lies. Everything else encodes with encode() below.
template <class M>
constexpr Framed<M> frame(MsgType type, const M& msg, std::size_t tail_bytes = 0) {
  static_assert(offsetof(Framed<M>, msg) == sizeof(FrameHeader), "no padding after the header");
  return Framed<M>{FrameHeader{static_cast<std::uint32_t>(sizeof(M) + tail_bytes),
                               static_cast<std::uint16_t>(type), 0},
                   msg};
}

// ---- encoders: one per message, beside its decoder below --------------------------------
// encode(m) frames a message with its own type and the length its own fields announce (the
// tail's counts and lengths, the payload of kBytes), so no sender picks a type or counts a
// length. The tail follows: in its own iovec, or, for a handover, written by HandoverWriter.

// The message type of each fixed part (an incomplete type for anything else).
template <class M>
struct TypeOf;
#define RIG_WIRE_TYPE_OF(M, T) \
  template <>                  \
  struct TypeOf<M> {           \
    static constexpr MsgType value = MsgType::T; \
  };
RIG_WIRE_TYPE_OF(Hello, kHello)
RIG_WIRE_TYPE_OF(Welcome, kWelcome)
RIG_WIRE_TYPE_OF(Request, kRequest)
RIG_WIRE_TYPE_OF(Answer, kAnswer)
RIG_WIRE_TYPE_OF(Release, kRelease)
RIG_WIRE_TYPE_OF(Handover, kHandover)
RIG_WIRE_TYPE_OF(Bytes, kBytes)
RIG_WIRE_TYPE_OF(Done, kDone)
RIG_WIRE_TYPE_OF(Failure, kFailure)
RIG_WIRE_TYPE_OF(Close, kClose)
RIG_WIRE_TYPE_OF(Ping, kPing)
RIG_WIRE_TYPE_OF(StripeGrant, kStripeGrant)
RIG_WIRE_TYPE_OF(Join, kJoin)
RIG_WIRE_TYPE_OF(Striped, kStriped)
RIG_WIRE_TYPE_OF(Challenge, kChallenge)
RIG_WIRE_TYPE_OF(Proof, kProof)
#undef RIG_WIRE_TYPE_OF

// The body of a handover with these counts (what check_header bounds by kMaxControlLength).
constexpr std::uint64_t handover_body_bytes(std::uint64_t waits, std::uint64_t parts, std::uint64_t words) {
  return sizeof(Handover) + waits * sizeof(Wait) + parts * sizeof(Part) + words * sizeof(std::uint32_t);
}

// The bytes after the fixed part that a message's own fields announce: 0 but for these.
template <class M>
constexpr std::uint64_t tail_bytes(const M&) { return 0; }
constexpr std::uint64_t tail_bytes(const Welcome& m) { return std::uint64_t{m.n_accounts} * sizeof(Account); }
constexpr std::uint64_t tail_bytes(const Request& m) { return m.tail_length; }
constexpr std::uint64_t tail_bytes(const Answer& m) { return m.text_length; }
constexpr std::uint64_t tail_bytes(const Failure& m) { return m.text_length; }
constexpr std::uint64_t tail_bytes(const Bytes& m) { return m.length; }
constexpr std::uint64_t tail_bytes(const Handover& m) {
  return handover_body_bytes(m.n_waits, m.n_parts, m.n_words) - sizeof(Handover);
}

template <class M>
constexpr Framed<M> encode(const M& msg) {
  return frame(TypeOf<M>::value, msg, tail_bytes(msg));
}

// A whole handover frame written into `out` (frame_bytes(h) bytes): its header and fixed part
// at once, then the caller's waits, parts and words, each at its own place in the tail, in any
// interleaving (so a sender fills all three in one pass over its parts). complete() says that
// the counts of `h` were written, no more (a debug build asserts each).
class HandoverWriter {
 public:
  static constexpr std::size_t frame_bytes(const Handover& h) {
    return sizeof(FrameHeader) + handover_body_bytes(h.n_waits, h.n_parts, h.n_words);
  }
  HandoverWriter(std::byte* out, const Handover& h)
      : waits_(out + sizeof(Framed<Handover>)),
        parts_(waits_ + std::size_t{h.n_waits} * sizeof(Wait)),
        words_(parts_ + std::size_t{h.n_parts} * sizeof(Part)),
        end_(words_ + std::size_t{h.n_words} * sizeof(std::uint32_t)),
        waits_end_(parts_),
        parts_end_(words_) {
    const Framed<Handover> f = encode(h);
    std::memcpy(out, &f, sizeof f);
  }
  void wait(const Wait& w) { put(waits_, waits_end_, &w, sizeof w); }
  void part(const Part& p) { put(parts_, parts_end_, &p, sizeof p); }
  void words(const std::uint32_t* w, std::uint32_t n) { put(words_, end_, w, std::size_t{n} * sizeof *w); }
  bool complete() const { return waits_ == waits_end_ && parts_ == parts_end_ && words_ == end_; }

 private:
  static void put(std::byte*& at, const std::byte* end, const void* what, std::size_t n) {
    assert(static_cast<std::size_t>(end - at) >= n && "more than the handover's counts");
    (void)end;
    if (n != 0) std::memcpy(at, what, n);
    at += n;
  }
  std::byte* waits_;
  std::byte* parts_;
  std::byte* words_;
  std::byte* const end_;
  const std::byte* const waits_end_;
  const std::byte* const parts_end_;
};

struct WelcomeView {
  Welcome fixed;
  std::span<const Account> accounts;
};
struct RequestView {
  Request fixed;
  std::span<const std::byte> tail;
};
struct AnswerView {
  Answer fixed;
  std::string_view text;
};
struct HandoverView {
  Handover fixed;
  std::span<const Wait> waits;
  std::span<const Part> parts;
  std::span<const std::uint32_t> words;
};
struct FailureView {
  Failure fixed;
  std::string_view text;
};

// `body` is the frame's body (header.length bytes), 8-byte aligned.
Outcome decode(std::span<const std::byte> body, Hello& out);
Outcome decode(std::span<const std::byte> body, WelcomeView& out);
Outcome decode(std::span<const std::byte> body, RequestView& out);
Outcome decode(std::span<const std::byte> body, AnswerView& out);
Outcome decode(std::span<const std::byte> body, Release& out);
Outcome decode(std::span<const std::byte> body, HandoverView& out);
Outcome decode(std::span<const std::byte> body, Done& out);
Outcome decode(std::span<const std::byte> body, FailureView& out);
Outcome decode(std::span<const std::byte> body, Close& out);
Outcome decode(std::span<const std::byte> body, Ping& out);
Outcome decode(std::span<const std::byte> body, StripeGrant& out);
Outcome decode(std::span<const std::byte> body, Join& out);
Outcome decode(std::span<const std::byte> body, Challenge& out);
Outcome decode(std::span<const std::byte> body, Proof& out);
// Checks what needs no state; the receiver checks the pieces against its stripe count.
Outcome decode(std::span<const std::byte> body, Striped& out);
// kBytes: only the fixed part is read into memory; `frame_length` is the header's length, and
// the payload (out.length bytes) follows on the stream.
Outcome decode_bytes(std::span<const std::byte> fixed, std::uint32_t frame_length, Bytes& out);

// Checks a copy part on its own: sides, rows, pitches, and that no range overflows 64 bits.
Outcome check_copy(const CopyPart& copy);

// Bytes that cross for a copy with a kClient side: rows * row_bytes (checked by check_copy).
inline std::uint64_t packed_bytes(const CopyPart& c) { return c.rows * c.row_bytes; }

// fixed_string (public): rig/wire/messages.h, beside the fields it reads.
// Writes `text` NUL-padded into a fixed field, cut to leave at least one NUL.
void set_fixed_string(char (&field)[32], std::string_view text);
void set_fixed_string(char (&field)[kAgentNameBytes], std::string_view text);

// ---- the status query (kFeatureStatus) ----

struct StatusView {
  Status fixed;
  std::string_view text;  // the JSON, not checked here
};
// id not 0, reserved 0, length exactly 16.
Outcome decode(std::span<const std::byte> body, StatusQuery& out);
// id not 0, reserved 0, text_length in 1..kMaxStatusText, length = 16 + text_length exactly.
Outcome decode(std::span<const std::byte> body, StatusView& out);
template <>
struct TypeOf<StatusQuery> {
  static constexpr MsgType value = MsgType::kStatusQuery;
};
template <>
struct TypeOf<Status> {
  static constexpr MsgType value = MsgType::kStatus;
};
constexpr std::uint64_t tail_bytes(const Status& m) { return m.text_length; }
// A kStatusQuery frame, ready to send.
Framed<StatusQuery> encode_status_query(std::uint64_t id);
// kStatus's header and fixed part for `text`, which is sent right after them as the tail. -EINVAL
// for id 0 or a text outside 1..kMaxStatusText bytes (nothing encoded).
Outcome encode_status(std::uint64_t id, std::string_view text, Framed<Status>& out);

}  // namespace rig::wire
