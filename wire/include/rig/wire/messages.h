// The messages of protocol v2: fixed-size, explicitly laid out structs that follow the frame
// header, each with its variable tail described next to it (wire/PROTOCOL.md has the bytes).
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <string_view>

#include "rig/export.h"
#include "rig/wire/frame_header.h"
#include "rig/wire/limits.h"

namespace rig::wire {

// The limits of what a message holds are in limits.h.

// ---- kHello / kWelcome -------------------------------------------------------------------

enum Feature : std::uint32_t {
  kFeatureNone = 0,
  kFeaturePrograms = 1u << 0,  // the machine's host loads rig.program images
  kFeatureStripes = 1u << 1,   // a link may stripe large payloads over extra data connections
  kFeatureStatus = 1u << 2,    // the client may ask for the agent's figures (kStatusQuery, kStatus)
};

// The handshake (wire/PROTOCOL.md 6.1): kHello, kChallenge, kProof, kWelcome. A nonce is 32 fresh
// random bytes; a MAC is HMAC-SHA256 (rig/wire/auth.h says over what).
inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kMacBytes = 32;

struct Hello {
  std::uint32_t magic;     // kMagic
  std::uint16_t version;   // kVersion
  std::uint16_t reserved;  // 0
  std::uint32_t features;  // offered
  std::uint32_t reserved2; // 0
  std::uint8_t nonce[kNonceBytes];  // the client's
};
static_assert(sizeof(Hello) == 48);
static_assert(offsetof(Hello, nonce) == 16);

// The agent's answer to a hello, and to a join: its nonce, whether it authenticates peers (then
// the peer must prove that it holds the agent's secret; otherwise it runs open, which an agent
// does only on loopback and a client that holds a secret refuses), and its name (rig-agent
// --name), which both proofs cover and a client may pin.
inline constexpr std::size_t kAgentNameBytes = 64;  // NUL-padded: 1 to 63 bytes of name
struct Challenge {
  std::uint8_t nonce[kNonceBytes];  // the agent's
  std::uint32_t auth;               // 1: a proof by the shared secret is required; 0: open
  std::uint32_t reserved;
  char name[kAgentNameBytes];       // the agent's, NUL-padded, at least one NUL
};
static_assert(sizeof(Challenge) == 104);
static_assert(offsetof(Challenge, name) == 40);

// The client's answer to a challenge: its MAC (all zeros towards an open agent).
struct Proof {
  std::uint8_t mac[kMacBytes];
};
static_assert(sizeof(Proof) == 32);

enum class AccountKind : std::uint32_t { kHost = 0, kDevice = 1 };

// The agent's answer for a device it opened (the page's Wire.account).
struct Account {
  std::uint32_t id;           // 0 is the machine's host
  std::uint32_t kind;         // AccountKind
  std::uint64_t budget;       // bytes the job may hold on it
  std::uint64_t cache_bytes;
  std::uint64_t reaches;      // bit i: this device reaches the own memory of device i
  char name[32];              // NUL-padded, at least one NUL
  char arch[32];              // NUL-padded, at least one NUL
};
static_assert(sizeof(Account) == 96);
static_assert(offsetof(Account, budget) == 8);
static_assert(offsetof(Account, reaches) == 24);
static_assert(offsetof(Account, name) == 32);
static_assert(offsetof(Account, arch) == 64);

// The text of a NUL-padded fixed field (an account's name or arch): up to its first NUL.
RIG_API std::string_view fixed_string(const char (&field)[32]);
RIG_API std::string_view fixed_string(const char (&field)[kAgentNameBytes]);  // a challenge's name

// Tail: Account[n_accounts], ids strictly increasing.
struct Welcome {
  std::uint32_t magic;
  std::uint16_t version;
  std::uint16_t auth;        // 1: mac is the agent's proof; 0: an open agent (mac all zeros)
  std::uint32_t features;    // accepted: a subset of what Hello offered
  std::uint32_t n_accounts;  // 1..kMaxDevices
  std::uint8_t mac[kMacBytes];
};
static_assert(sizeof(Welcome) == 48);
static_assert(offsetof(Welcome, mac) == 16);

// ---- kStripeGrant / kJoin (striping) -------------------------------------------------------

// Sent by the agent right after its kWelcome when it accepted kFeatureStripes: a data connection
// joins the job by sending kJoin{token} as its first frame. The token names the job; it proves
// nothing: the agent answers a join with a kChallenge, and the client's kProof is a MAC by the
// job's key (rig/wire/auth.h) over the join and that challenge.
struct StripeGrant {
  std::uint64_t token;        // random, non-zero: names the job to joining connections
  std::uint32_t max_stripes;  // 1..kMaxStripes
  std::uint32_t reserved;
};
static_assert(sizeof(StripeGrant) == 16);

// The first frame of a data connection (instead of a kHello). The agent echoes it once the
// join is proved (kChallenge, kProof) and the connection attached as stripe `stripe` of `count`.
struct Join {
  std::uint32_t magic;    // kMagic
  std::uint16_t version;  // kVersion
  std::uint16_t stripe;   // 0..count-1
  std::uint16_t count;    // 1..kMaxStripes, the same in every join of the job
  std::uint16_t reserved;
  std::uint32_t min_kib;  // >= 1, the same in every join: copies into the client of at least
                          // this many KiB cross on the stripes
  std::uint64_t token;    // the grant's
};
static_assert(sizeof(Join) == 24);
static_assert(offsetof(Join, token) == 16);

// ---- kRequest / kAnswer ------------------------------------------------------------------

enum class RequestKind : std::uint16_t {
  kAlloc = 1,    // device, object = new id, arg0 = bytes, arg1 = memory kind
  kMapPeer = 2,  // device (the mapping's), object = new id, arg0 = the mapped object
  kImage = 3,    // device, object = new image id; tail = the binary
  kEntry = 4,    // object = image id; tail = the function's name
  kPrepare = 5,  // object = image id; tail = the function's name; answered like kEntry
};
inline constexpr std::uint16_t kMaxRequestKind = 5;

// Tail: tail_length bytes (binary for kImage, name for kEntry/kPrepare, nothing otherwise).
struct Request {
  std::uint64_t id;     // the request's id, echoed by its answer
  std::uint16_t kind;   // RequestKind
  std::uint16_t reserved;
  std::uint32_t device;
  std::uint64_t object;
  std::uint64_t arg0;
  std::uint64_t arg1;
  std::uint32_t tail_length;
  std::uint32_t reserved2;
};
static_assert(sizeof(Request) == 48);
static_assert(offsetof(Request, object) == 16);
static_assert(offsetof(Request, tail_length) == 40);

enum class AnswerStatus : std::uint16_t {
  kOk = 0,        // value: kEntry's function index; nothing otherwise
  kRefused = 1,   // no room or refused; text says why
  kAbsent = 2,    // kEntry: the image has no such function
  kNoMemory = 3,  // kEntry: value = bytes the launches need that the device lacks
  kInvalid = 4,   // kEntry: the function needs more than the device offers; text says why
  kError = 5,     // kImage: the binary is refused; text says why
};
inline constexpr std::uint16_t kMaxAnswerStatus = 5;

// Tail: text_length bytes of reason.
struct Answer {
  std::uint64_t id;
  std::uint16_t status;  // AnswerStatus
  std::uint16_t reserved;
  std::uint32_t text_length;  // <= kMaxText
  std::uint64_t value;
};
static_assert(sizeof(Answer) == 24);

// ---- kRelease ----------------------------------------------------------------------------

enum class ReleaseKind : std::uint16_t { kObject = 1, kImage = 2 };

struct Release {
  std::uint64_t object;
  std::uint16_t kind;  // ReleaseKind
  std::uint16_t reserved;
  std::uint32_t reserved2;
};
static_assert(sizeof(Release) == 16);

// ---- kHandover ---------------------------------------------------------------------------

// Wait until `device`'s (on the same agent) value reaches `value`.
struct Wait {
  std::uint32_t device;
  std::uint32_t reserved;
  std::uint64_t value;
};
static_assert(sizeof(Wait) == 16);

enum class SideKind : std::uint8_t {
  kObject = 1,  // an agent object: handle = its id
  kClient = 2,  // this (the client's) process's memory; its bytes cross in kBytes messages
};

struct Side {
  std::uint8_t kind;  // SideKind
  std::uint8_t reserved[7];
  std::uint64_t handle;  // object id, 0 for kClient
  std::uint64_t offset;  // byte offset in the object, 0 for kClient
};
static_assert(sizeof(Side) == 24);

enum class PartKind : std::uint16_t { kCopy = 1, kWords = 2 };

// A copy moves `rows` rows of `row_bytes` bytes; row r starts at offset + r * pitch on each side.
// The bytes of a kClient side cross packed (rows end to end), in kBytes messages whose offsets
// count packed bytes.
struct CopyPart {
  Side src;
  Side dst;
  std::uint64_t rows;       // >= 1, <= kMaxRows
  std::uint64_t row_bytes;  // >= 1
  std::uint64_t src_pitch;  // >= row_bytes when rows > 1
  std::uint64_t dst_pitch;  // >= row_bytes when rows > 1
};
static_assert(sizeof(CopyPart) == 80);

// A launch of function `function` of image `image` with n_words words taken, in part order,
// from the handover's word tail.
struct WordsPart {
  std::uint64_t image;
  std::uint32_t function;
  std::uint32_t n_words;
  std::uint8_t reserved[64];
};
static_assert(sizeof(WordsPart) == 80);

struct Part {
  std::uint16_t kind;   // PartKind
  std::uint16_t queue;  // 0 COMPUTE:0, 1 COPY:0
  std::uint32_t reserved;
  union {
    CopyPart copy;
    WordsPart words;
  };
};
static_assert(sizeof(Part) == 88);
static_assert(offsetof(Part, copy) == 8);

// Tail: Wait[n_waits], Part[n_parts], then u32 words (the sum of the words parts' n_words).
// The bytes of each part with a kClient source follow the handover as kBytes messages, in part
// order, before any other message of the sender.
struct Handover {
  std::uint32_t device;
  std::uint32_t n_waits;
  std::uint64_t value;
  std::uint32_t n_parts;
  std::uint32_t n_words;
};
static_assert(sizeof(Handover) == 24);
static_assert(sizeof(Handover) + std::size_t{kMaxParts} * sizeof(Part) <= kMaxControlLength);
static_assert(sizeof(Handover) + sizeof(Part) + std::size_t{kMaxWords} * 4 <= kMaxControlLength);
static_assert(kMaxWaits >= kMaxDevices, "waits merged per device always fit");

// ---- kBytes, kDone, kFailure -------------------------------------------------------------

// Payload: length bytes of part `part` of `device`'s value `value`, at packed offset `offset`.
struct Bytes {
  std::uint32_t device;
  std::uint32_t part;
  std::uint64_t value;
  std::uint64_t offset;
  std::uint32_t length;  // 1..kMaxChunk
  std::uint32_t reserved;
};
static_assert(sizeof(Bytes) == 32);

// On the job's connection, in place of kBytes messages: `length` bytes of part `part` of
// `device`'s value `value` at packed offset `offset` cross on the data connections, cut into
// pieces of `piece` bytes (the last may be shorter): piece i, at offset + i * piece, is one kBytes
// message on stripe i. So ceil(length / piece) <= the job's stripe count.
struct Striped {
  std::uint32_t device;
  std::uint32_t part;
  std::uint64_t value;
  std::uint64_t offset;
  std::uint32_t length;  // >= 1
  std::uint32_t piece;   // 1..kMaxChunk
};
static_assert(sizeof(Striped) == 32);
static_assert(offsetof(Striped, length) == 24);

// Piece i of a kStriped message: [first, first + bytes) of its packed bytes, relative to offset.
struct StripePiece {
  std::uint64_t first;
  std::uint32_t bytes;
};
inline std::uint32_t stripe_pieces(const Striped& s) {
  return static_cast<std::uint32_t>((std::uint64_t{s.length} + s.piece - 1) / s.piece);
}
inline StripePiece stripe_piece(const Striped& s, std::uint32_t i) {
  const std::uint64_t first = std::uint64_t{i} * s.piece;
  return {first, static_cast<std::uint32_t>(std::min<std::uint64_t>(s.piece, s.length - first))};
}

struct Done {
  std::uint32_t device;
  std::uint32_t reserved;
  std::uint64_t value;
};
static_assert(sizeof(Done) == 16);

inline constexpr std::uint32_t kNoDevice = 0xffffffffu;

// Tail: text_length bytes of reason, the job's root cause as the sender knows it.
struct Failure {
  std::uint32_t device;  // the device that faulted, or kNoDevice
  std::uint32_t text_length;
};
static_assert(sizeof(Failure) == 8);

struct Close {
  std::uint64_t reserved;
};
static_assert(sizeof(Close) == 8);

struct Ping {
  std::uint64_t nonce;
};
static_assert(sizeof(Ping) == 8);

// ---- kStatusQuery / kStatus (kFeatureStatus) ------------------------------------------

// The longest status text: an agent with more threads than fit leaves the rest out.
inline constexpr std::uint32_t kMaxStatusText = 64 * 1024;

// Asks the agent for its figures; answered by one kStatus with the same id.
struct StatusQuery {
  std::uint64_t id;  // not 0; rig-remote's client draws it from its request ids
  std::uint64_t reserved;
};
static_assert(sizeof(StatusQuery) == 16);
static_assert(offsetof(StatusQuery, reserved) == 8);

// Tail: text_length bytes of JSON (wire/PROTOCOL.md 5.18 lists its keys).
struct Status {
  std::uint64_t id;           // the query's
  std::uint32_t text_length;  // 1..kMaxStatusText
  std::uint32_t reserved;
};
static_assert(sizeof(Status) == 16);
static_assert(offsetof(Status, text_length) == 8);
static_assert(sizeof(Status) + kMaxStatusText <= kMaxControlLength);

}  // namespace rig::wire
