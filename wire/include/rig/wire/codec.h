// Encoding and strict decoding of protocol v1 messages. No I/O here.
//
// Decoding: a receiver first checks the 8-byte header (check_header), which bounds the body
// before anything is read; then, for every type but kBytes, reads the whole body into 8-byte
// aligned memory and decodes it into a view whose spans point into that memory. Every decoder
// checks every length, count and field it can check without state, and on failure returns
// false with `why` naming the message and the field. Nothing is read out of bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "rig/export.h"
#include "rig/wire/frame_header.h"
#include "rig/wire/messages.h"

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

template <class M>
constexpr Framed<M> frame(MsgType type, const M& msg, std::size_t tail_bytes = 0) {
  static_assert(offsetof(Framed<M>, msg) == sizeof(FrameHeader), "no padding after the header");
  return Framed<M>{FrameHeader{static_cast<std::uint32_t>(sizeof(M) + tail_bytes),
                               static_cast<std::uint16_t>(type), 0},
                   msg};
}

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
bool decode(std::span<const std::byte> body, Hello& out, std::string& why);
bool decode(std::span<const std::byte> body, WelcomeView& out, std::string& why);
bool decode(std::span<const std::byte> body, RequestView& out, std::string& why);
bool decode(std::span<const std::byte> body, AnswerView& out, std::string& why);
bool decode(std::span<const std::byte> body, Release& out, std::string& why);
bool decode(std::span<const std::byte> body, HandoverView& out, std::string& why);
bool decode(std::span<const std::byte> body, Done& out, std::string& why);
bool decode(std::span<const std::byte> body, FailureView& out, std::string& why);
bool decode(std::span<const std::byte> body, Close& out, std::string& why);
bool decode(std::span<const std::byte> body, Ping& out, std::string& why);
bool decode(std::span<const std::byte> body, StripeGrant& out, std::string& why);
bool decode(std::span<const std::byte> body, Join& out, std::string& why);
bool decode(std::span<const std::byte> body, Challenge& out, std::string& why);
bool decode(std::span<const std::byte> body, Proof& out, std::string& why);
// Checks what needs no state; the receiver checks the pieces against its stripe count.
bool decode(std::span<const std::byte> body, Striped& out, std::string& why);
// kBytes: only the fixed part is read into memory; `frame_length` is the header's length, and
// the payload (out.length bytes) follows on the stream.
bool decode_bytes(std::span<const std::byte> fixed, std::uint32_t frame_length, Bytes& out,
                  std::string& why);

// Checks a copy part on its own: sides, rows, pitches, and that no range overflows 64 bits.
bool check_copy(const CopyPart& copy, std::string& why);

// Bytes that cross for a copy with a kClient side: rows * row_bytes (checked by check_copy).
inline std::uint64_t packed_bytes(const CopyPart& c) { return c.rows * c.row_bytes; }

// Copies a NUL-padded fixed field to a string_view up to its first NUL.
RIG_API std::string_view fixed_string(const char (&field)[32]);
void set_fixed_string(char (&field)[32], std::string_view text);

// ---- the status query (kFeatureStatus) ----

struct StatusView {
  Status fixed;
  std::string_view text;  // the JSON, not checked here
};
// id not 0, reserved 0, length exactly 16.
bool decode(std::span<const std::byte> body, StatusQuery& out, std::string& why);
// id not 0, reserved 0, text_length in 1..kMaxStatusText, length = 16 + text_length exactly.
bool decode(std::span<const std::byte> body, StatusView& out, std::string& why);
// A kStatusQuery frame, ready to send.
Framed<StatusQuery> encode_status_query(std::uint64_t id);
// kStatus's header and fixed part for `text`, which is sent right after them as the tail. False
// with `why` for id 0 or a text outside 1..kMaxStatusText bytes (nothing encoded).
bool encode_status(std::uint64_t id, std::string_view text, Framed<Status>& out, std::string& why);

}  // namespace rig::wire
