// Protocol v1 codec (wire/PROTOCOL.md): the byte layout, check_header, and every decoder's
// acceptance and rejection. Every body is decoded from an exactly sized, 8-byte aligned heap
// buffer, so under ASan a read one byte past the body is reported.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rig/wire/codec.h"

namespace rig::wire {
namespace {

constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

// ---- buffers and encoding ---------------------------------------------------------------

// Exactly n bytes, 8-byte aligned, on the heap.
class Buffer {
 public:
  explicit Buffer(std::size_t n)
      : n_(n), p_(static_cast<std::byte*>(::operator new(n, std::align_val_t{8}))) {
    if (n_ > 0) std::memset(p_, 0, n_);
  }
  explicit Buffer(std::span<const std::byte> bytes) : Buffer(bytes.size()) {
    if (n_ > 0) std::memcpy(p_, bytes.data(), n_);
  }
  ~Buffer() { ::operator delete(p_, std::align_val_t{8}); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::span<const std::byte> bytes() const { return {p_, n_}; }
  std::byte* data() { return p_; }

 private:
  std::size_t n_;
  std::byte* p_;
};

// A whole frame: header, fixed part, tail.
struct Encoded {
  std::vector<std::byte> frame;

  FrameHeader header() const {
    FrameHeader h{};
    std::memcpy(&h, frame.data(), sizeof h);
    return h;
  }
  std::span<const std::byte> body() const {
    return std::span<const std::byte>(frame).subspan(sizeof(FrameHeader));
  }
  // The body with `n` bytes added (zeros) or, for negative n, removed at its end; the header
  // is not changed.
  Encoded resized_body(std::ptrdiff_t n) const {
    Encoded e = *this;
    e.frame.resize(static_cast<std::size_t>(static_cast<std::ptrdiff_t>(frame.size()) + n));
    return e;
  }
};

class Tail {
 public:
  template <class T>
  Tail& add(const T& v) {
    return add_raw(&v, sizeof v);
  }
  template <class T>
  Tail& add_all(const std::vector<T>& v) {
    return add_raw(v.data(), v.size() * sizeof(T));
  }
  Tail& add_text(std::string_view s) { return add_raw(s.data(), s.size()); }
  Tail& add_raw(const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
    return *this;
  }
  std::span<const std::byte> span() const { return bytes_; }

 private:
  std::vector<std::byte> bytes_;
};

template <class M>
Encoded encode(MsgType type, const M& msg, std::span<const std::byte> tail = {}) {
  const auto framed = frame(type, msg, tail.size());
  Encoded e;
  e.frame.resize(sizeof framed + tail.size());
  std::memcpy(e.frame.data(), &framed, sizeof framed);
  if (!tail.empty()) std::memcpy(e.frame.data() + sizeof framed, tail.data(), tail.size());
  return e;
}

template <class M>
Encoded encode(MsgType type, const M& msg, const Tail& tail) {
  return encode(type, msg, tail.span());
}

// ---- acceptance and rejection -----------------------------------------------------------

template <class View>
::testing::AssertionResult Accepted(std::span<const std::byte> body) {
  Buffer b(body);
  View v{};
  std::string why;
  if (!passed(decode(b.bytes(), v), why)) return ::testing::AssertionFailure() << "rejected: " << why;
  return ::testing::AssertionSuccess();
}

// Rejected, with a reason that names the message and contains `detail`.
template <class View>
::testing::AssertionResult Rejected(std::span<const std::byte> body, std::string_view message,
                                    std::string_view detail) {
  Buffer b(body);
  View v{};
  const Outcome o = decode(b.bytes(), v);
  if (o.ok()) return ::testing::AssertionFailure() << "accepted";
  const std::string& why = o.why();
  if (o.err() != -EPROTO) return ::testing::AssertionFailure() << "rejected with errno " << o.err() << ": " << why;
  if (why.empty()) return ::testing::AssertionFailure() << "rejected with an empty reason";
  if (why.find(message) == std::string::npos) {
    return ::testing::AssertionFailure() << "reason does not name '" << message << "': " << why;
  }
  if (why.find(detail) == std::string::npos) {
    return ::testing::AssertionFailure() << "reason lacks '" << detail << "': " << why;
  }
  return ::testing::AssertionSuccess() << why;
}

::testing::AssertionResult BytesAccepted(std::span<const std::byte> fixed, std::uint32_t frame_length) {
  Buffer b(fixed);
  Bytes out{};
  std::string why;
  if (!passed(decode_bytes(b.bytes(), frame_length, out), why)) {
    return ::testing::AssertionFailure() << "rejected: " << why;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult BytesRejected(std::span<const std::byte> fixed, std::uint32_t frame_length,
                                         std::string_view detail) {
  Buffer b(fixed);
  Bytes out{};
  const Outcome o = decode_bytes(b.bytes(), frame_length, out);
  if (o.ok()) return ::testing::AssertionFailure() << "accepted";
  const std::string& why = o.why();
  if (o.err() != -EPROTO) return ::testing::AssertionFailure() << "rejected with errno " << o.err() << ": " << why;
  if (why.empty()) return ::testing::AssertionFailure() << "rejected with an empty reason";
  if (why.find("bytes") == std::string::npos || why.find(detail) == std::string::npos) {
    return ::testing::AssertionFailure() << "reason lacks 'bytes' or '" << detail << "': " << why;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult HeaderRejected(FrameHeader h, std::string_view detail) {
  const char* bad = check_header(h);
  if (bad == nullptr) {
    return ::testing::AssertionFailure() << "accepted (type " << h.type << ", length " << h.length
                                         << ", flags " << h.flags << ")";
  }
  const std::string why = bad;
  if (why.empty()) return ::testing::AssertionFailure() << "rejected with an empty reason";
  if (why.find("frame") == std::string::npos || why.find(detail) == std::string::npos) {
    return ::testing::AssertionFailure() << "reason lacks 'frame' or '" << detail << "': " << why;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult HeaderAccepted(FrameHeader h) {
  if (const char* bad = check_header(h)) return ::testing::AssertionFailure() << bad;
  return ::testing::AssertionSuccess();
}

FrameHeader header(MsgType type, std::uint32_t length, std::uint16_t flags = 0) {
  return FrameHeader{length, static_cast<std::uint16_t>(type), flags};
}

// Every strict prefix of the body is rejected, naming the message.
template <class View>
void ExpectEveryTruncationRejected(const Encoded& e, std::string_view message) {
  const auto body = e.body();
  ASSERT_TRUE(Accepted<View>(body));
  for (std::size_t n = 0; n < body.size(); ++n) {
    SCOPED_TRACE("truncated to " + std::to_string(n) + " of " + std::to_string(body.size()));
    EXPECT_TRUE(Rejected<View>(body.first(n), message, ""));
  }
}

// ---- valid messages ---------------------------------------------------------------------

Hello a_hello() { return Hello{kMagic, kVersion, 0, kFeaturePrograms, 0}; }

Account an_account(std::uint32_t id, std::string_view name = {}) {
  Account a{};
  a.id = id;
  a.kind = static_cast<std::uint32_t>(id == 0 ? AccountKind::kHost : AccountKind::kDevice);
  a.budget = 0x1000 + id;
  a.cache_bytes = 0x2000 + id;
  a.reaches = 0x3000 + id;
  set_fixed_string(a.name, name.empty() ? (id == 0 ? "host" : "dev" + std::to_string(id)) : name);
  set_fixed_string(a.arch, id == 0 ? "x86_64" : "sim");
  return a;
}

Encoded welcome(std::vector<Account> accounts, std::uint32_t n_accounts) {
  return encode(MsgType::kWelcome, Welcome{kMagic, kVersion, 0, kFeaturePrograms, n_accounts},
                Tail().add_all(accounts));
}
Encoded welcome(const std::vector<Account>& accounts) {
  return welcome(accounts, static_cast<std::uint32_t>(accounts.size()));
}
Encoded welcome_with(const Welcome& w, const std::vector<Account>& accounts) {
  return encode(MsgType::kWelcome, w, Tail().add_all(accounts));
}

Request a_request(RequestKind kind, std::uint32_t tail_length) {
  Request r{};
  r.id = 0x1122334455667788;
  r.kind = static_cast<std::uint16_t>(kind);
  r.device = 3;
  r.object = (std::uint64_t{1} << 48) | 7;
  r.arg0 = 4096;
  r.arg1 = 0x99;
  r.tail_length = tail_length;
  return r;
}
Encoded request(RequestKind kind, std::size_t tail_bytes) {
  const std::vector<std::byte> tail(tail_bytes, std::byte{'f'});
  return encode(MsgType::kRequest, a_request(kind, static_cast<std::uint32_t>(tail_bytes)), tail);
}

Encoded answer(std::uint16_t status, std::string_view text) {
  return encode(MsgType::kAnswer,
                Answer{77, status, 0, static_cast<std::uint32_t>(text.size()), 0xabc},
                Tail().add_text(text));
}

Encoded failure(std::uint32_t device, std::string_view text) {
  return encode(MsgType::kFailure, Failure{device, static_cast<std::uint32_t>(text.size())},
                Tail().add_text(text));
}

Side object_side(std::uint64_t handle, std::uint64_t offset) {
  Side s{};
  s.kind = static_cast<std::uint8_t>(SideKind::kObject);
  s.handle = handle;
  s.offset = offset;
  return s;
}
Side client_side() {
  Side s{};
  s.kind = static_cast<std::uint8_t>(SideKind::kClient);
  return s;
}

Part copy_part(const Side& src, const Side& dst, std::uint64_t rows, std::uint64_t row_bytes,
               std::uint64_t src_pitch, std::uint64_t dst_pitch, std::uint16_t queue = 1) {
  Part p;
  std::memset(&p, 0, sizeof p);
  p.kind = static_cast<std::uint16_t>(PartKind::kCopy);
  p.queue = queue;
  p.copy.src = src;
  p.copy.dst = dst;
  p.copy.rows = rows;
  p.copy.row_bytes = row_bytes;
  p.copy.src_pitch = src_pitch;
  p.copy.dst_pitch = dst_pitch;
  return p;
}
// Object 1 -> object 2, one row of 64 bytes.
Part a_copy() { return copy_part(object_side(1, 0), object_side(2, 0), 1, 64, 64, 64); }

Part words_part(std::uint64_t image, std::uint32_t function, std::uint32_t n_words) {
  Part p;
  std::memset(&p, 0, sizeof p);
  p.kind = static_cast<std::uint16_t>(PartKind::kWords);
  p.queue = 0;
  p.words.image = image;
  p.words.function = function;
  p.words.n_words = n_words;
  return p;
}

struct HandoverMsg {
  Handover fixed{2, 0, 9, 0, 0};
  std::vector<Wait> waits;
  std::vector<Part> parts;
  std::vector<std::uint32_t> words;
  bool count_from_vectors = true;

  Encoded build() const {
    Handover h = fixed;
    if (count_from_vectors) {
      h.n_waits = static_cast<std::uint32_t>(waits.size());
      h.n_parts = static_cast<std::uint32_t>(parts.size());
      h.n_words = static_cast<std::uint32_t>(words.size());
    }
    return encode(MsgType::kHandover, h, Tail().add_all(waits).add_all(parts).add_all(words));
  }
};

HandoverMsg with_copy(const Part& p) {
  HandoverMsg m;
  m.parts = {p};
  return m;
}

// A handover with every kind of part and side: waits, three copies, two launches.
HandoverMsg a_handover() {
  HandoverMsg m;
  m.fixed = Handover{0, 0, 0x0102030405060708, 0, 0};
  m.waits = {Wait{1, 0, 5}, Wait{63, 0, kU64Max}};
  m.parts = {
      copy_part(client_side(), object_side(0x0001000000000003, 128), 4, 16, 16, 32, 1),
      copy_part(object_side(0x0001000000000004, 8), client_side(), 3, 10, 24, 10, 1),
      copy_part(object_side(0x0001000000000005, 0), object_side(0x0001000000000006, 4), 1, 100, 0,
                0, 0),
      words_part(0x0001000000000009, 2, 3),
      words_part(0x0001000000000009, 5, 1),
  };
  m.words = {0x11, 0x22, 0x33, 0x44};
  return m;
}

Encoded bytes_fixed(const Bytes& b) { return encode(MsgType::kBytes, b, std::span<const std::byte>{}); }

// ---- field comparisons --------------------------------------------------------------------

void ExpectSameHeader(const FrameHeader& a, const FrameHeader& b) {
  EXPECT_EQ(a.length, b.length);
  EXPECT_EQ(a.type, b.type);
  EXPECT_EQ(a.flags, b.flags);
}

void ExpectSameAccount(const Account& a, const Account& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.budget, b.budget);
  EXPECT_EQ(a.cache_bytes, b.cache_bytes);
  EXPECT_EQ(a.reaches, b.reaches);
  EXPECT_EQ(0, std::memcmp(a.name, b.name, sizeof a.name));
  EXPECT_EQ(0, std::memcmp(a.arch, b.arch, sizeof a.arch));
}

void ExpectSameSide(const Side& a, const Side& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(0, std::memcmp(a.reserved, b.reserved, sizeof a.reserved));
  EXPECT_EQ(a.handle, b.handle);
  EXPECT_EQ(a.offset, b.offset);
}

void ExpectSamePart(const Part& a, const Part& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.queue, b.queue);
  EXPECT_EQ(a.reserved, b.reserved);
  if (a.kind == static_cast<std::uint16_t>(PartKind::kCopy)) {
    ExpectSameSide(a.copy.src, b.copy.src);
    ExpectSameSide(a.copy.dst, b.copy.dst);
    EXPECT_EQ(a.copy.rows, b.copy.rows);
    EXPECT_EQ(a.copy.row_bytes, b.copy.row_bytes);
    EXPECT_EQ(a.copy.src_pitch, b.copy.src_pitch);
    EXPECT_EQ(a.copy.dst_pitch, b.copy.dst_pitch);
  } else {
    EXPECT_EQ(a.words.image, b.words.image);
    EXPECT_EQ(a.words.function, b.words.function);
    EXPECT_EQ(a.words.n_words, b.words.n_words);
    EXPECT_EQ(0, std::memcmp(a.words.reserved, b.words.reserved, sizeof a.words.reserved));
  }
}

// =========================================================================================
// Layout: the offsets PROTOCOL.md gives.
// =========================================================================================

TEST(Layout, FieldOffsetsMatchTheProtocolDocument) {
  EXPECT_EQ(offsetof(Hello, magic), 0u);
  EXPECT_EQ(offsetof(Hello, version), 4u);
  EXPECT_EQ(offsetof(Hello, reserved), 6u);
  EXPECT_EQ(offsetof(Hello, features), 8u);
  EXPECT_EQ(offsetof(Hello, reserved2), 12u);
  EXPECT_EQ(offsetof(Welcome, features), 8u);
  EXPECT_EQ(offsetof(Welcome, n_accounts), 12u);
  EXPECT_EQ(offsetof(Account, kind), 4u);
  EXPECT_EQ(offsetof(Account, cache_bytes), 16u);
  EXPECT_EQ(offsetof(Request, kind), 8u);
  EXPECT_EQ(offsetof(Request, reserved), 10u);
  EXPECT_EQ(offsetof(Request, device), 12u);
  EXPECT_EQ(offsetof(Request, arg0), 24u);
  EXPECT_EQ(offsetof(Request, arg1), 32u);
  EXPECT_EQ(offsetof(Request, reserved2), 44u);
  EXPECT_EQ(offsetof(Answer, status), 8u);
  EXPECT_EQ(offsetof(Answer, reserved), 10u);
  EXPECT_EQ(offsetof(Answer, text_length), 12u);
  EXPECT_EQ(offsetof(Answer, value), 16u);
  EXPECT_EQ(offsetof(Release, kind), 8u);
  EXPECT_EQ(offsetof(Release, reserved), 10u);
  EXPECT_EQ(offsetof(Release, reserved2), 12u);
  EXPECT_EQ(offsetof(Wait, reserved), 4u);
  EXPECT_EQ(offsetof(Wait, value), 8u);
  EXPECT_EQ(offsetof(Side, reserved), 1u);
  EXPECT_EQ(offsetof(Side, handle), 8u);
  EXPECT_EQ(offsetof(Side, offset), 16u);
  EXPECT_EQ(offsetof(CopyPart, dst), 24u);
  EXPECT_EQ(offsetof(CopyPart, rows), 48u);
  EXPECT_EQ(offsetof(CopyPart, row_bytes), 56u);
  EXPECT_EQ(offsetof(CopyPart, src_pitch), 64u);
  EXPECT_EQ(offsetof(CopyPart, dst_pitch), 72u);
  EXPECT_EQ(offsetof(WordsPart, function), 8u);
  EXPECT_EQ(offsetof(WordsPart, n_words), 12u);
  EXPECT_EQ(offsetof(WordsPart, reserved), 16u);
  EXPECT_EQ(offsetof(Part, queue), 2u);
  EXPECT_EQ(offsetof(Part, reserved), 4u);
  EXPECT_EQ(offsetof(Part, words), 8u);
  EXPECT_EQ(offsetof(Handover, n_waits), 4u);
  EXPECT_EQ(offsetof(Handover, value), 8u);
  EXPECT_EQ(offsetof(Handover, n_parts), 16u);
  EXPECT_EQ(offsetof(Handover, n_words), 20u);
  EXPECT_EQ(offsetof(Bytes, part), 4u);
  EXPECT_EQ(offsetof(Bytes, value), 8u);
  EXPECT_EQ(offsetof(Bytes, offset), 16u);
  EXPECT_EQ(offsetof(Bytes, length), 24u);
  EXPECT_EQ(offsetof(Bytes, reserved), 28u);
  EXPECT_EQ(offsetof(Done, value), 8u);
  EXPECT_EQ(offsetof(Failure, text_length), 4u);
}

TEST(Layout, FramedPingIsLittleEndianOnTheWire) {
  const Encoded e = encode(MsgType::kPing, Ping{0x0807060504030201});
  const std::vector<std::uint8_t> want = {8, 0, 0, 0, 11, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_EQ(e.frame.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(static_cast<std::uint8_t>(e.frame[i]), want[i]) << "byte " << i;
  }
}

TEST(Layout, FramedHelloStartsWithTheMagicRIGR) {
  const Encoded e = encode(MsgType::kHello, a_hello());
  std::vector<std::uint8_t> want = {48, 0,   0,   0,   1, 0, 0, 0,  // header
                                    'R', 'I', 'G', 'R', 3, 0, 0, 0,  // magic, version 3
                                    1,   0,   0,   0,   0, 0, 0, 0};  // features, reserved
  want.resize(want.size() + kNonceBytes, 0);                          // the nonce (zero here)
  ASSERT_EQ(e.frame.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(static_cast<std::uint8_t>(e.frame[i]), want[i]) << "byte " << i;
  }
}

// The encoders (one per message, beside its decoder): the type is the message's own, and the
// length is what its own fields announce, so check_header accepts what they frame.
template <class M>
::testing::AssertionResult FramedAs(const Framed<M>& f, MsgType type, std::uint64_t tail) {
  if (f.header.type != static_cast<std::uint16_t>(type)) {
    return ::testing::AssertionFailure() << "type " << f.header.type << ", expected " << type_name(static_cast<std::uint16_t>(type));
  }
  if (f.header.length != sizeof(M) + tail) {
    return ::testing::AssertionFailure() << "length " << f.header.length << ", expected " << sizeof(M) + tail;
  }
  if (f.header.flags != 0) return ::testing::AssertionFailure() << "flags set";
  if (const char* bad = check_header(f.header)) return ::testing::AssertionFailure() << bad;
  return ::testing::AssertionSuccess();
}

TEST(Encoders, EveryMessageIsFramedWithItsTypeAndTheLengthItsFieldsAnnounce) {
  EXPECT_TRUE(FramedAs(wire::encode(a_hello()), MsgType::kHello, 0));
  Welcome w{kMagic, kVersion, 0, kFeaturePrograms, 3};
  EXPECT_TRUE(FramedAs(wire::encode(w), MsgType::kWelcome, 3 * sizeof(Account)));
  Request r{};
  r.kind = static_cast<std::uint16_t>(RequestKind::kImage);
  r.tail_length = 1000;
  EXPECT_TRUE(FramedAs(wire::encode(r), MsgType::kRequest, 1000));
  EXPECT_TRUE(FramedAs(wire::encode(Answer{1, 1, 0, 17, 0}), MsgType::kAnswer, 17));
  EXPECT_TRUE(FramedAs(wire::encode(Release{5, 1, 0, 0}), MsgType::kRelease, 0));
  EXPECT_TRUE(FramedAs(wire::encode(Handover{1, 2, 9, 3, 4}), MsgType::kHandover, 2 * 16 + 3 * 88 + 4 * 4));
  EXPECT_TRUE(FramedAs(wire::encode(Bytes{1, 0, 9, 0, 4096, 0}), MsgType::kBytes, 4096));
  EXPECT_TRUE(FramedAs(wire::encode(Done{1, 0, 9}), MsgType::kDone, 0));
  EXPECT_TRUE(FramedAs(wire::encode(Failure{kNoDevice, 12}), MsgType::kFailure, 12));
  EXPECT_TRUE(FramedAs(wire::encode(Close{0}), MsgType::kClose, 0));
  EXPECT_TRUE(FramedAs(wire::encode(Ping{7}), MsgType::kPing, 0));
  EXPECT_TRUE(FramedAs(wire::encode(StripeGrant{1, 4, 0}), MsgType::kStripeGrant, 0));
  EXPECT_TRUE(FramedAs(wire::encode(Join{kMagic, kVersion, 0, 2, 0, 64, 1}), MsgType::kJoin, 0));
  EXPECT_TRUE(FramedAs(wire::encode(Striped{1, 0, 9, 0, 100, 50}), MsgType::kStriped, 0));
  EXPECT_TRUE(FramedAs(wire::encode(Challenge{}), MsgType::kChallenge, 0));
  EXPECT_TRUE(FramedAs(wire::encode(Proof{}), MsgType::kProof, 0));
  EXPECT_TRUE(FramedAs(wire::encode(StatusQuery{1, 0}), MsgType::kStatusQuery, 0));
  EXPECT_TRUE(FramedAs(wire::encode(Status{1, 300, 0}), MsgType::kStatus, 300));
}

TEST(Encoders, AHandoverWrittenPartByPartIsTheFrameOfItsWaitsPartsAndWords) {
  const HandoverMsg m = a_handover();
  const Encoded want = m.build();
  Handover h = m.fixed;
  h.n_waits = static_cast<std::uint32_t>(m.waits.size());
  h.n_parts = static_cast<std::uint32_t>(m.parts.size());
  h.n_words = static_cast<std::uint32_t>(m.words.size());
  ASSERT_EQ(HandoverWriter::frame_bytes(h), want.frame.size());
  std::vector<std::byte> got(want.frame.size(), std::byte{0xee});
  HandoverWriter out(got.data(), h);
  // Interleaved as a sender fills them in one pass: each words part's words after its part.
  out.part(m.parts[0]);
  out.wait(m.waits[0]);
  out.part(m.parts[1]);
  out.part(m.parts[2]);
  out.part(m.parts[3]);
  out.words(m.words.data(), 3);
  EXPECT_FALSE(out.complete());
  out.wait(m.waits[1]);
  out.part(m.parts[4]);
  out.words(m.words.data() + 3, 1);
  out.words(nullptr, 0);  // a words part without words writes nothing
  EXPECT_TRUE(out.complete());
  EXPECT_EQ(got, want.frame);
}

TEST(Layout, FixedSizeOfEveryTypeIsItsStruct) {
  EXPECT_EQ(fixed_size(MsgType::kHello), 48u);
  EXPECT_EQ(fixed_size(MsgType::kWelcome), 48u);
  EXPECT_EQ(fixed_size(MsgType::kRequest), 48u);
  EXPECT_EQ(fixed_size(MsgType::kAnswer), 24u);
  EXPECT_EQ(fixed_size(MsgType::kRelease), 16u);
  EXPECT_EQ(fixed_size(MsgType::kHandover), 24u);
  EXPECT_EQ(fixed_size(MsgType::kBytes), 32u);
  EXPECT_EQ(fixed_size(MsgType::kDone), 16u);
  EXPECT_EQ(fixed_size(MsgType::kFailure), 8u);
  EXPECT_EQ(fixed_size(MsgType::kClose), 8u);
  EXPECT_EQ(fixed_size(MsgType::kPing), 8u);
  EXPECT_EQ(fixed_size(MsgType::kStripeGrant), 16u);
  EXPECT_EQ(fixed_size(MsgType::kJoin), 24u);
  EXPECT_EQ(fixed_size(MsgType::kStriped), 32u);
  EXPECT_EQ(fixed_size(MsgType::kChallenge), 104u);
  EXPECT_EQ(fixed_size(MsgType::kProof), 32u);
  EXPECT_EQ(fixed_size(MsgType::kStatusQuery), 16u);
  EXPECT_EQ(fixed_size(MsgType::kStatus), 16u);
}

TEST(Layout, TypeNamesAreTheMessageNames) {
  const char* names[] = {"hello", "welcome", "request", "answer", "release", "handover",
                         "bytes", "done",    "failure", "close",  "ping", "stripe grant",
                         "join",  "striped", "challenge", "proof", "status query", "status"};
  for (std::uint16_t t = 1; t <= kMaxMsgType; ++t) EXPECT_STREQ(type_name(t), names[t - 1]);
  EXPECT_STREQ(type_name(0), "unknown");
  EXPECT_STREQ(type_name(kMaxMsgType + 1), "unknown");
}

TEST(Layout, LargestLegalControlMessagesFitTheControlBound) {
  // A handover's counts are bounded one at a time by what a frame carries; together, by its
  // length (check_header).
  EXPECT_LE(sizeof(Handover) + std::uint64_t{kMaxWaits} * sizeof(Wait), kMaxControlLength);
  EXPECT_LE(sizeof(Handover) + std::uint64_t{kMaxParts} * sizeof(Part), kMaxControlLength);
  EXPECT_LE(sizeof(Handover) + sizeof(Part) + std::uint64_t{kMaxWords} * 4, kMaxControlLength);
  EXPECT_LE(sizeof(Request) + kMaxImage, kMaxControlLength);
  EXPECT_LE(sizeof(Welcome) + kMaxDevices * sizeof(Account), kMaxControlLength);
  EXPECT_LE(sizeof(Answer) + kMaxText, kMaxControlLength);
  EXPECT_LE(sizeof(Status) + kMaxStatusText, kMaxControlLength);
}

// =========================================================================================
// check_header
// =========================================================================================

TEST(CheckHeader, EveryTypeAtItsFixedSizeIsAccepted) {
  for (std::uint16_t t = 1; t <= kMaxMsgType; ++t) {
    const auto type = static_cast<MsgType>(t);
    const auto n = static_cast<std::uint32_t>(fixed_size(type) + (type == MsgType::kBytes ? 1 : 0));
    EXPECT_TRUE(HeaderAccepted(header(type, n))) << type_name(t);
  }
}

TEST(CheckHeader, UnknownTypeIsRejected) {
  for (std::uint16_t t : {std::uint16_t{0}, std::uint16_t{kMaxMsgType + 1}, std::uint16_t{0xffff}}) {
    EXPECT_TRUE(HeaderRejected(FrameHeader{64, t, 0}, "unknown type")) << t;
  }
}

TEST(CheckHeader, AnyFlagSetIsRejected) {
  for (int bit = 0; bit < 16; ++bit) {
    EXPECT_TRUE(HeaderRejected(header(MsgType::kPing, 8, static_cast<std::uint16_t>(1u << bit)), "flags"))
        << bit;
    EXPECT_TRUE(HeaderRejected(header(MsgType::kBytes, 64, static_cast<std::uint16_t>(1u << bit)), "flags"))
        << bit;
  }
}

TEST(CheckHeader, LengthShorterThanTheFixedPartIsRejected) {
  for (std::uint16_t t = 1; t <= kMaxMsgType; ++t) {
    const auto type = static_cast<MsgType>(t);
    EXPECT_TRUE(HeaderRejected(header(type, static_cast<std::uint32_t>(fixed_size(type) - 1)), "shorter"))
        << type_name(t);
    EXPECT_TRUE(HeaderRejected(header(type, 0), "shorter")) << type_name(t);
  }
}

TEST(CheckHeader, ControlMessageLongerThanTheMaximumIsRejected) {
  for (std::uint16_t t = 1; t <= kMaxMsgType; ++t) {
    const auto type = static_cast<MsgType>(t);
    if (type == MsgType::kBytes) continue;
    EXPECT_TRUE(HeaderAccepted(header(type, kMaxControlLength - 1))) << type_name(t);
    EXPECT_TRUE(HeaderAccepted(header(type, kMaxControlLength))) << type_name(t);
    EXPECT_TRUE(HeaderRejected(header(type, kMaxControlLength + 1), "longer than the maximum message"))
        << type_name(t);
    EXPECT_TRUE(HeaderRejected(header(type, 0xffffffffu), "longer than the maximum message"))
        << type_name(t);
  }
}

TEST(CheckHeader, BytesWithNoPayloadIsRejected) {
  EXPECT_TRUE(HeaderRejected(header(MsgType::kBytes, sizeof(Bytes)), "no payload"));
  EXPECT_TRUE(HeaderAccepted(header(MsgType::kBytes, sizeof(Bytes) + 1)));
}

TEST(CheckHeader, BytesOverTheMaximumChunkIsRejected) {
  EXPECT_TRUE(HeaderAccepted(header(MsgType::kBytes, sizeof(Bytes) + kMaxChunk - 1)));
  EXPECT_TRUE(HeaderAccepted(header(MsgType::kBytes, sizeof(Bytes) + kMaxChunk)));
  EXPECT_TRUE(HeaderRejected(header(MsgType::kBytes, sizeof(Bytes) + kMaxChunk + 1), "maximum chunk"));
  EXPECT_TRUE(HeaderRejected(header(MsgType::kBytes, 0xffffffffu), "maximum chunk"));
}

TEST(CheckHeader, BytesMayExceedTheControlBound) {
  // A chunk is bounded by kMaxChunk, not by kMaxControlLength.
  EXPECT_TRUE(HeaderAccepted(header(MsgType::kBytes, kMaxControlLength + 1)));
}

// =========================================================================================
// hello
// =========================================================================================

TEST(Hello, RoundTripKeepsEveryField) {
  const Hello sent{kMagic, kVersion, 0, 0x80000001u, 0};  // an unknown feature bit is an offer
  const Encoded e = encode(MsgType::kHello, sent);
  ExpectSameHeader(e.header(), header(MsgType::kHello, sizeof(Hello)));
  ASSERT_EQ(check_header(e.header()), nullptr);
  Buffer body(e.body());
  Hello got{};
  std::string why;
  ASSERT_TRUE(passed(decode(body.bytes(), got), why)) << why;
  EXPECT_EQ(got.magic, kMagic);
  EXPECT_EQ(got.version, kVersion);
  EXPECT_EQ(got.reserved, 0u);
  EXPECT_EQ(got.features, 0x80000001u);
  EXPECT_EQ(got.reserved2, 0u);
}

TEST(Hello, TheClientsNonceCrossesIntact) {
  Hello sent = a_hello();
  for (std::size_t i = 0; i < kNonceBytes; ++i) sent.nonce[i] = static_cast<std::uint8_t>(i * 7 + 1);
  Buffer body(encode(MsgType::kHello, sent).body());
  Hello got{};
  std::string why;
  ASSERT_TRUE(passed(decode(body.bytes(), got), why)) << why;
  EXPECT_EQ(std::memcmp(got.nonce, sent.nonce, kNonceBytes), 0);
}

TEST(Hello, EveryTruncationIsRejected) {
  ExpectEveryTruncationRejected<Hello>(encode(MsgType::kHello, a_hello()), "hello");
}

TEST(Hello, TrailingByteIsRejected) {
  EXPECT_TRUE(Rejected<Hello>(encode(MsgType::kHello, a_hello()).resized_body(1).body(), "hello",
                              "expected exactly 48"));
}

TEST(Hello, BadMagicIsRejected) {
  Hello h = a_hello();
  h.magic = 0x52474953;
  EXPECT_TRUE(Rejected<Hello>(encode(MsgType::kHello, h).body(), "hello", "magic"));
}

TEST(Hello, OtherVersionIsRejected) {
  for (const std::uint16_t v : {0, 1, kVersion - 1, kVersion + 1, 0xffff}) {
    Hello h = a_hello();
    h.version = v;
    // Both versions named: an older (or newer) client learns what this side speaks.
    EXPECT_TRUE(Rejected<Hello>(encode(MsgType::kHello, h).body(), "hello",
                                "version " + std::to_string(v) + " is not supported (this side speaks " +
                                    std::to_string(kVersion) + ")"))
        << v;
  }
}

TEST(Hello, ReservedFieldsSetAreRejected) {
  Hello h = a_hello();
  h.reserved = 1;
  EXPECT_TRUE(Rejected<Hello>(encode(MsgType::kHello, h).body(), "hello", "reserved"));
  h = a_hello();
  h.reserved2 = 0x80000000u;
  EXPECT_TRUE(Rejected<Hello>(encode(MsgType::kHello, h).body(), "hello", "reserved"));
}

// =========================================================================================
// welcome
// =========================================================================================

TEST(Welcome, RoundTripKeepsEveryField) {
  const std::vector<Account> sent = {an_account(0), an_account(1), an_account(5, "gpu-five")};
  const Encoded e = welcome(sent);
  ExpectSameHeader(e.header(), header(MsgType::kWelcome, sizeof(Welcome) + 3 * sizeof(Account)));
  ASSERT_EQ(check_header(e.header()), nullptr);
  Buffer body(e.body());
  WelcomeView v;
  std::string why;
  ASSERT_TRUE(passed(decode(body.bytes(), v), why)) << why;
  EXPECT_EQ(v.fixed.magic, kMagic);
  EXPECT_EQ(v.fixed.version, kVersion);
  EXPECT_EQ(v.fixed.auth, 0u);
  EXPECT_EQ(v.fixed.features, static_cast<std::uint32_t>(kFeaturePrograms));
  EXPECT_EQ(v.fixed.n_accounts, 3u);
  ASSERT_EQ(v.accounts.size(), 3u);
  EXPECT_EQ(static_cast<const void*>(v.accounts.data()), body.bytes().data() + sizeof(Welcome));
  for (std::size_t i = 0; i < sent.size(); ++i) ExpectSameAccount(v.accounts[i], sent[i]);
  EXPECT_EQ(fixed_string(v.accounts[2].name), "gpu-five");
  EXPECT_EQ(fixed_string(v.accounts[0].arch), "x86_64");
}

TEST(Welcome, EveryTruncationIsRejected) {
  ExpectEveryTruncationRejected<WelcomeView>(welcome({an_account(0), an_account(1)}), "welcome");
}

TEST(Welcome, UnalignedBodyIsRejected) {
  const Encoded e = welcome({an_account(0)});
  Buffer shifted(e.body().size() + 1);
  std::memcpy(shifted.data() + 1, e.body().data(), e.body().size());
  WelcomeView v;
  std::string why;
  EXPECT_FALSE(passed(decode(shifted.bytes().subspan(1), v), why));
  EXPECT_NE(why.find("welcome"), std::string::npos) << why;
  EXPECT_NE(why.find("aligned"), std::string::npos) << why;
  EXPECT_EQ(decode(shifted.bytes().subspan(1), v).err(), -EFAULT);  // the receiver's bug, not the peer's
}

TEST(Welcome, BadMagicOrVersionOrReservedIsRejected) {
  const std::vector<Account> accounts = {an_account(0)};
  EXPECT_TRUE(Rejected<WelcomeView>(welcome_with(Welcome{kMagic + 1, kVersion, 0, 0, 1}, accounts).body(),
                                    "welcome", "magic"));
  // An older agent's welcome: both versions named.
  EXPECT_TRUE(Rejected<WelcomeView>(welcome_with(Welcome{kMagic, kVersion - 1, 0, 0, 1}, accounts).body(), "welcome",
                                    "version " + std::to_string(kVersion - 1) + " is not supported (this side speaks " +
                                        std::to_string(kVersion) + ")"));
  EXPECT_TRUE(Rejected<WelcomeView>(welcome_with(Welcome{kMagic, 0, 0, 0, 1}, accounts).body(),
                                    "welcome", "version"));
  EXPECT_TRUE(Rejected<WelcomeView>(welcome_with(Welcome{kMagic, kVersion, 2, 0, 1}, accounts).body(),
                                    "welcome", "auth"));
  Welcome forged{kMagic, kVersion, 0, 0, 1};
  forged.mac[31] = 1;  // an open agent proves nothing, so it sends no proof
  EXPECT_TRUE(Rejected<WelcomeView>(welcome_with(forged, accounts).body(), "welcome", "carries a MAC"));
  EXPECT_TRUE(Accepted<WelcomeView>(welcome_with(Welcome{kMagic, kVersion, 1, 0, 1}, accounts).body()));
}

// =========================================================================================
// challenge, proof
// =========================================================================================

TEST(Challenge, RoundTripKeepsTheNonceTheAuthFlagAndTheAgentsName) {
  Challenge c{};
  for (std::size_t i = 0; i < kNonceBytes; ++i) c.nonce[i] = static_cast<std::uint8_t>(255 - i);
  c.auth = 1;
  const std::string longest(kAgentNameBytes - 1, 'n');  // every byte of the field but its NUL
  set_fixed_string(c.name, longest);
  const Encoded e = encode(MsgType::kChallenge, c);
  ExpectSameHeader(e.header(), header(MsgType::kChallenge, sizeof(Challenge)));
  ASSERT_EQ(check_header(e.header()), nullptr);
  Buffer body(e.body());
  Challenge got{};
  std::string why;
  ASSERT_TRUE(passed(decode(body.bytes(), got), why)) << why;
  EXPECT_EQ(std::memcmp(got.nonce, c.nonce, kNonceBytes), 0);
  EXPECT_EQ(got.auth, 1u);
  EXPECT_EQ(fixed_string(got.name), longest);
}

TEST(Challenge, AnEmptyNameAndANameWithoutItsNulAreRejected) {
  Challenge c{};
  EXPECT_TRUE(Rejected<Challenge>(encode(MsgType::kChallenge, c).body(), "challenge", "name"));
  std::memset(c.name, 'n', sizeof c.name);  // the last byte too: no NUL
  EXPECT_TRUE(Rejected<Challenge>(encode(MsgType::kChallenge, c).body(), "challenge", "name"));
  c.name[sizeof c.name - 1] = 0;
  EXPECT_TRUE(Accepted<Challenge>(encode(MsgType::kChallenge, c).body()));
}

TEST(Challenge, AnAuthFlagOtherThanZeroOrOneAndReservedBitsAreRejected) {
  Challenge c{};
  set_fixed_string(c.name, "a");
  c.auth = 2;
  EXPECT_TRUE(Rejected<Challenge>(encode(MsgType::kChallenge, c).body(), "challenge", "auth"));
  c.auth = 0;
  c.reserved = 1;
  EXPECT_TRUE(Rejected<Challenge>(encode(MsgType::kChallenge, c).body(), "challenge", "reserved"));
  c.reserved = 0;
  ExpectEveryTruncationRejected<Challenge>(encode(MsgType::kChallenge, c), "challenge");
}

TEST(Proof, RoundTripKeepsTheMacAndTruncationsAreRejected) {
  Proof p{};
  for (std::size_t i = 0; i < kMacBytes; ++i) p.mac[i] = static_cast<std::uint8_t>(i ^ 0x5a);
  Buffer body(encode(MsgType::kProof, p).body());
  Proof got{};
  std::string why;
  ASSERT_TRUE(passed(decode(body.bytes(), got), why)) << why;
  EXPECT_EQ(std::memcmp(got.mac, p.mac, kMacBytes), 0);
  ExpectEveryTruncationRejected<Proof>(encode(MsgType::kProof, p), "proof");
}

TEST(Welcome, AccountCountBoundsAreOneToMaxDevices) {
  std::vector<Account> all;
  for (std::uint32_t id = 0; id <= kMaxDevices; ++id) all.push_back(an_account(id));
  EXPECT_TRUE(Rejected<WelcomeView>(welcome({}, 0).body(), "welcome", "account count 0"));
  EXPECT_TRUE(Accepted<WelcomeView>(welcome({all.begin(), all.begin() + 1}).body()));
  EXPECT_TRUE(Accepted<WelcomeView>(welcome({all.begin(), all.begin() + kMaxDevices - 1}).body()));
  EXPECT_TRUE(Accepted<WelcomeView>(welcome({all.begin(), all.begin() + kMaxDevices}).body()));
  // 65 accounts (ids 0..64): the count is rejected before any account is looked at.
  EXPECT_TRUE(Rejected<WelcomeView>(welcome(all).body(), "welcome", "account count 65"));
}

TEST(Welcome, AccountIdAtMaxDevicesIsRejected) {
  EXPECT_TRUE(Accepted<WelcomeView>(welcome({an_account(0), an_account(kMaxDevices - 1)}).body()));
  EXPECT_TRUE(Rejected<WelcomeView>(welcome({an_account(0), an_account(kMaxDevices)}).body(), "welcome",
                                    "past the maximum device"));
}

TEST(Welcome, CountNotMatchingTheTailIsRejected) {
  const std::vector<Account> two = {an_account(0), an_account(1)};
  EXPECT_TRUE(Rejected<WelcomeView>(welcome(two, 3).body(), "welcome", "length does not match"));
  EXPECT_TRUE(Rejected<WelcomeView>(welcome(two, 1).body(), "welcome", "length does not match"));
  EXPECT_TRUE(Rejected<WelcomeView>(welcome(two).resized_body(1).body(), "welcome", "length does not match"));
  EXPECT_TRUE(Rejected<WelcomeView>(welcome(two).resized_body(-1).body(), "welcome", "length does not match"));
}

TEST(Welcome, DuplicateIdsAreRejected) {
  EXPECT_TRUE(Rejected<WelcomeView>(welcome({an_account(0), an_account(1), an_account(1)}).body(),
                                    "welcome", "strictly increasing"));
  EXPECT_TRUE(Rejected<WelcomeView>(welcome({an_account(0), an_account(0)}).body(), "welcome",
                                    "strictly increasing"));
}

TEST(Welcome, UnsortedIdsAreRejected) {
  EXPECT_TRUE(Rejected<WelcomeView>(welcome({an_account(0), an_account(2), an_account(1)}).body(),
                                    "welcome", "strictly increasing"));
}

TEST(Welcome, MissingHostIsRejected) {
  EXPECT_TRUE(Rejected<WelcomeView>(welcome({an_account(1), an_account(2)}).body(), "welcome",
                                    "(account 0) is missing"));
}

TEST(Welcome, HostWithNonzeroIdIsRejected) {
  Account host_at_3 = an_account(3);
  host_at_3.kind = static_cast<std::uint32_t>(AccountKind::kHost);
  EXPECT_TRUE(Rejected<WelcomeView>(welcome({an_account(0), host_at_3}).body(), "welcome",
                                    "only it, has id 0"));
}

TEST(Welcome, DeviceWithIdZeroIsRejected) {
  Account device_at_0 = an_account(0);
  device_at_0.kind = static_cast<std::uint32_t>(AccountKind::kDevice);
  EXPECT_TRUE(Rejected<WelcomeView>(welcome({device_at_0, an_account(1)}).body(), "welcome",
                                    "only it, has id 0"));
}

TEST(Welcome, UnknownAccountKindIsRejected) {
  Account odd = an_account(1);
  odd.kind = 2;
  EXPECT_TRUE(Rejected<WelcomeView>(welcome({an_account(0), odd}).body(), "welcome", "unknown kind"));
}

TEST(Welcome, UnterminatedNameIsRejected) {
  Account a = an_account(1);
  std::memset(a.name, 'x', sizeof a.name);
  EXPECT_TRUE(Rejected<WelcomeView>(welcome({an_account(0), a}).body(), "welcome", "NUL-terminated"));
  a.name[31] = 0;  // 31 characters and a NUL: the longest name
  EXPECT_TRUE(Accepted<WelcomeView>(welcome({an_account(0), a}).body()));
}

TEST(Welcome, UnterminatedArchIsRejected) {
  Account a = an_account(0);
  std::memset(a.arch, 'y', sizeof a.arch);
  EXPECT_TRUE(Rejected<WelcomeView>(welcome({a}).body(), "welcome", "NUL-terminated"));
}

TEST(Welcome, EmptyNameIsRejectedButEmptyArchIsNot) {
  Account a = an_account(1);
  std::memset(a.name, 0, sizeof a.name);
  EXPECT_TRUE(Rejected<WelcomeView>(welcome({an_account(0), a}).body(), "welcome", "empty name"));
  a = an_account(1);
  std::memset(a.arch, 0, sizeof a.arch);
  EXPECT_TRUE(Accepted<WelcomeView>(welcome({an_account(0), a}).body()));
}

// =========================================================================================
// request
// =========================================================================================

TEST(Request, RoundTripKeepsEveryField) {
  for (const auto kind : {RequestKind::kAlloc, RequestKind::kMapPeer, RequestKind::kImage,
                          RequestKind::kEntry, RequestKind::kPrepare}) {
    SCOPED_TRACE(static_cast<int>(kind));
    const bool tail = kind != RequestKind::kAlloc && kind != RequestKind::kMapPeer;
    const std::string text = tail ? "saxpy_f32" : "";
    const Request sent = a_request(kind, static_cast<std::uint32_t>(text.size()));
    const Encoded e = encode(MsgType::kRequest, sent, Tail().add_text(text));
    ExpectSameHeader(e.header(), header(MsgType::kRequest, static_cast<std::uint32_t>(48 + text.size())));
    ASSERT_EQ(check_header(e.header()), nullptr);
    Buffer body(e.body());
    RequestView v;
    std::string why;
    ASSERT_TRUE(passed(decode(body.bytes(), v), why)) << why;
    EXPECT_EQ(v.fixed.id, sent.id);
    EXPECT_EQ(v.fixed.kind, sent.kind);
    EXPECT_EQ(v.fixed.reserved, 0u);
    EXPECT_EQ(v.fixed.device, sent.device);
    EXPECT_EQ(v.fixed.object, sent.object);
    EXPECT_EQ(v.fixed.arg0, sent.arg0);
    EXPECT_EQ(v.fixed.arg1, sent.arg1);
    EXPECT_EQ(v.fixed.tail_length, sent.tail_length);
    EXPECT_EQ(v.fixed.reserved2, 0u);
    ASSERT_EQ(v.tail.size(), text.size());
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(v.tail.data()), v.tail.size()), text);
    if (tail) {
      EXPECT_EQ(v.tail.data(), body.bytes().data() + sizeof(Request));
    }
  }
}

TEST(Request, IdZeroIsAcceptedByTheCodec) {
  Request r = a_request(RequestKind::kPrepare, 2);
  r.id = 0;
  EXPECT_TRUE(Accepted<RequestView>(encode(MsgType::kRequest, r, Tail().add_text("fn")).body()));
}

TEST(Request, EveryTruncationIsRejected) {
  ExpectEveryTruncationRejected<RequestView>(request(RequestKind::kEntry, 5), "request");
  ExpectEveryTruncationRejected<RequestView>(request(RequestKind::kAlloc, 0), "request");
}

TEST(Request, UnknownKindIsRejected) {
  for (std::uint16_t k : {std::uint16_t{0}, std::uint16_t{kMaxRequestKind + 1}, std::uint16_t{0xffff}}) {
    Request r = a_request(RequestKind::kAlloc, 0);
    r.kind = k;
    EXPECT_TRUE(Rejected<RequestView>(encode(MsgType::kRequest, r).body(), "request", "unknown kind")) << k;
  }
}

TEST(Request, ReservedFieldsSetAreRejected) {
  Request r = a_request(RequestKind::kAlloc, 0);
  r.reserved = 1;
  EXPECT_TRUE(Rejected<RequestView>(encode(MsgType::kRequest, r).body(), "request", "reserved"));
  r = a_request(RequestKind::kAlloc, 0);
  r.reserved2 = 1;
  EXPECT_TRUE(Rejected<RequestView>(encode(MsgType::kRequest, r).body(), "request", "reserved"));
}

TEST(Request, TailLengthNotMatchingTheBodyIsRejected) {
  const Encoded e = request(RequestKind::kEntry, 8);
  EXPECT_TRUE(Rejected<RequestView>(e.resized_body(1).body(), "request", "length does not match"));
  EXPECT_TRUE(Rejected<RequestView>(e.resized_body(-1).body(), "request", "length does not match"));
  Request r = a_request(RequestKind::kEntry, 0xffffffffu);
  EXPECT_TRUE(Rejected<RequestView>(encode(MsgType::kRequest, r, Tail().add_text("name")).body(), "request",
                                    "length does not match"));
}

TEST(Request, AllocOrMapPeerWithATailIsRejected) {
  EXPECT_TRUE(Rejected<RequestView>(request(RequestKind::kAlloc, 1).body(), "request", "with a tail"));
  EXPECT_TRUE(Rejected<RequestView>(request(RequestKind::kMapPeer, 1).body(), "request", "with a tail"));
}

TEST(Request, ImageBinaryBoundsAreOneToMaxImage) {
  EXPECT_TRUE(Rejected<RequestView>(request(RequestKind::kImage, 0).body(), "request", "image binary"));
  EXPECT_TRUE(Accepted<RequestView>(request(RequestKind::kImage, 1).body()));
  EXPECT_TRUE(Accepted<RequestView>(request(RequestKind::kImage, kMaxImage - 1).body()));
  const Encoded at = request(RequestKind::kImage, kMaxImage);
  EXPECT_TRUE(Accepted<RequestView>(at.body()));
  EXPECT_TRUE(HeaderAccepted(at.header()));
  EXPECT_TRUE(Rejected<RequestView>(request(RequestKind::kImage, kMaxImage + 1).body(), "request",
                                    "image binary"));
}

TEST(Request, FunctionNameBoundsAreOneToMaxName) {
  for (const auto kind : {RequestKind::kEntry, RequestKind::kPrepare}) {
    SCOPED_TRACE(static_cast<int>(kind));
    EXPECT_TRUE(Rejected<RequestView>(request(kind, 0).body(), "request", "function name"));
    EXPECT_TRUE(Accepted<RequestView>(request(kind, 1).body()));
    EXPECT_TRUE(Accepted<RequestView>(request(kind, kMaxName - 1).body()));
    EXPECT_TRUE(Accepted<RequestView>(request(kind, kMaxName).body()));
    EXPECT_TRUE(Rejected<RequestView>(request(kind, kMaxName + 1).body(), "request", "function name"));
  }
}

// =========================================================================================
// answer
// =========================================================================================

TEST(Answer, RoundTripKeepsEveryField) {
  const Encoded e = encode(MsgType::kAnswer, Answer{0x0102030405060708, 3, 0, 7, 0x1122334455667788},
                           Tail().add_text("no room"));
  ExpectSameHeader(e.header(), header(MsgType::kAnswer, 24 + 7));
  ASSERT_EQ(check_header(e.header()), nullptr);
  Buffer body(e.body());
  AnswerView v;
  std::string why;
  ASSERT_TRUE(passed(decode(body.bytes(), v), why)) << why;
  EXPECT_EQ(v.fixed.id, 0x0102030405060708u);
  EXPECT_EQ(v.fixed.status, 3u);
  EXPECT_EQ(v.fixed.reserved, 0u);
  EXPECT_EQ(v.fixed.text_length, 7u);
  EXPECT_EQ(v.fixed.value, 0x1122334455667788u);
  EXPECT_EQ(v.text, "no room");
  EXPECT_EQ(static_cast<const void*>(v.text.data()), body.bytes().data() + sizeof(Answer));
}

TEST(Answer, EveryTruncationIsRejected) {
  ExpectEveryTruncationRejected<AnswerView>(answer(1, "refused"), "answer");
}

TEST(Answer, EveryKnownStatusIsAcceptedAndUnknownRejected) {
  for (std::uint16_t s = 0; s <= kMaxAnswerStatus; ++s) EXPECT_TRUE(Accepted<AnswerView>(answer(s, "").body())) << s;
  EXPECT_TRUE(Rejected<AnswerView>(answer(kMaxAnswerStatus + 1, "").body(), "answer", "unknown status"));
  EXPECT_TRUE(Rejected<AnswerView>(answer(0xffff, "").body(), "answer", "unknown status"));
}

TEST(Answer, ReservedFieldSetIsRejected) {
  EXPECT_TRUE(Rejected<AnswerView>(encode(MsgType::kAnswer, Answer{1, 0, 1, 0, 0}).body(), "answer", "reserved"));
}

TEST(Answer, TextBoundIsMaxText) {
  EXPECT_TRUE(Accepted<AnswerView>(answer(1, std::string(kMaxText - 1, 'r')).body()));
  EXPECT_TRUE(Accepted<AnswerView>(answer(1, std::string(kMaxText, 'r')).body()));
  EXPECT_TRUE(Rejected<AnswerView>(answer(1, std::string(kMaxText + 1, 'r')).body(), "answer", "too long"));
}

TEST(Answer, TextLengthNotMatchingTheBodyIsRejected) {
  const Encoded e = answer(5, "bad binary");
  EXPECT_TRUE(Rejected<AnswerView>(e.resized_body(1).body(), "answer", "length does not match"));
  EXPECT_TRUE(Rejected<AnswerView>(e.resized_body(-1).body(), "answer", "length does not match"));
}

// =========================================================================================
// release
// =========================================================================================

TEST(Release, RoundTripKeepsEveryField) {
  for (const auto kind : {ReleaseKind::kObject, ReleaseKind::kImage}) {
    const Release sent{0x0002000000000011, static_cast<std::uint16_t>(kind), 0, 0};
    const Encoded e = encode(MsgType::kRelease, sent);
    ExpectSameHeader(e.header(), header(MsgType::kRelease, 16));
    ASSERT_EQ(check_header(e.header()), nullptr);
    Buffer body(e.body());
    Release got{};
    std::string why;
    ASSERT_TRUE(passed(decode(body.bytes(), got), why)) << why;
    EXPECT_EQ(got.object, sent.object);
    EXPECT_EQ(got.kind, sent.kind);
    EXPECT_EQ(got.reserved, 0u);
    EXPECT_EQ(got.reserved2, 0u);
  }
}

TEST(Release, EveryTruncationIsRejected) {
  ExpectEveryTruncationRejected<Release>(encode(MsgType::kRelease, Release{9, 1, 0, 0}), "release");
}

TEST(Release, TrailingByteIsRejected) {
  EXPECT_TRUE(Rejected<Release>(encode(MsgType::kRelease, Release{9, 1, 0, 0}).resized_body(1).body(),
                                "release", "expected exactly"));
}

TEST(Release, UnknownKindIsRejected) {
  for (std::uint16_t k : {std::uint16_t{0}, std::uint16_t{3}, std::uint16_t{0xffff}}) {
    EXPECT_TRUE(Rejected<Release>(encode(MsgType::kRelease, Release{9, k, 0, 0}).body(), "release",
                                  "unknown kind"))
        << k;
  }
}

TEST(Release, ReservedFieldsSetAreRejected) {
  EXPECT_TRUE(Rejected<Release>(encode(MsgType::kRelease, Release{9, 1, 1, 0}).body(), "release", "reserved"));
  EXPECT_TRUE(Rejected<Release>(encode(MsgType::kRelease, Release{9, 1, 0, 1}).body(), "release", "reserved"));
}

// =========================================================================================
// handover
// =========================================================================================

TEST(Handover, RoundTripKeepsEveryField) {
  const HandoverMsg sent = a_handover();
  const Encoded e = sent.build();
  const std::uint32_t length = 24 + 2 * 16 + 5 * 88 + 4 * 4;
  ExpectSameHeader(e.header(), header(MsgType::kHandover, length));
  ASSERT_EQ(check_header(e.header()), nullptr);
  Buffer body(e.body());
  HandoverView v;
  std::string why;
  ASSERT_TRUE(passed(decode(body.bytes(), v), why)) << why;
  EXPECT_EQ(v.fixed.device, 0u);
  EXPECT_EQ(v.fixed.n_waits, 2u);
  EXPECT_EQ(v.fixed.value, 0x0102030405060708u);
  EXPECT_EQ(v.fixed.n_parts, 5u);
  EXPECT_EQ(v.fixed.n_words, 4u);
  ASSERT_EQ(v.waits.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(v.waits[i].device, sent.waits[i].device);
    EXPECT_EQ(v.waits[i].reserved, 0u);
    EXPECT_EQ(v.waits[i].value, sent.waits[i].value);
  }
  ASSERT_EQ(v.parts.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    SCOPED_TRACE("part " + std::to_string(i));
    ExpectSamePart(v.parts[i], sent.parts[i]);
  }
  ASSERT_EQ(v.words.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(v.words[i], sent.words[i]);
  // The views point into the body, in the documented order.
  const std::byte* b = body.bytes().data();
  EXPECT_EQ(static_cast<const void*>(v.waits.data()), b + 24);
  EXPECT_EQ(static_cast<const void*>(v.parts.data()), b + 24 + 2 * 16);
  EXPECT_EQ(static_cast<const void*>(v.words.data()), b + 24 + 2 * 16 + 5 * 88);
  EXPECT_EQ(packed_bytes(v.parts[0].copy), 64u);
  EXPECT_EQ(packed_bytes(v.parts[1].copy), 30u);
}

TEST(Handover, EmptyHandoverIsAccepted) {
  EXPECT_TRUE(Accepted<HandoverView>(HandoverMsg{}.build().body()));
}

TEST(Handover, EveryTruncationIsRejected) {
  ExpectEveryTruncationRejected<HandoverView>(a_handover().build(), "handover");
}

TEST(Handover, UnalignedBodyIsRejected) {
  const Encoded e = a_handover().build();
  Buffer shifted(e.body().size() + 4);
  std::memcpy(shifted.data() + 4, e.body().data(), e.body().size());
  HandoverView v;
  std::string why;
  EXPECT_FALSE(passed(decode(shifted.bytes().subspan(4), v), why));
  EXPECT_NE(why.find("handover"), std::string::npos) << why;
  EXPECT_NE(why.find("aligned"), std::string::npos) << why;
  EXPECT_EQ(decode(shifted.bytes().subspan(4), v).err(), -EFAULT);  // the receiver's bug, not the peer's
}

TEST(Handover, DeviceAtMaxDevicesIsRejected) {
  HandoverMsg m;
  m.fixed.device = kMaxDevices - 1;
  EXPECT_TRUE(Accepted<HandoverView>(m.build().body()));
  m.fixed.device = kMaxDevices;
  EXPECT_TRUE(Rejected<HandoverView>(m.build().body(), "handover", "device past the maximum"));
}

TEST(Handover, WaitCountBoundIsMaxWaits) {
  for (const std::uint32_t n : {kMaxWaits - 1, kMaxWaits, kMaxWaits + 1}) {
    HandoverMsg m;
    m.waits.assign(n, Wait{1, 0, 3});
    if (n <= kMaxWaits) {
      EXPECT_TRUE(Accepted<HandoverView>(m.build().body())) << n;
    } else {
      EXPECT_TRUE(Rejected<HandoverView>(m.build().body(), "handover", "too many waits")) << n;
    }
  }
}

TEST(Handover, HandoverWithTooManyPartsIsRejected) {
  for (const std::uint32_t n : {kMaxParts - 1, kMaxParts, kMaxParts + 1}) {
    HandoverMsg m;
    m.parts.assign(n, a_copy());
    if (n <= kMaxParts) {
      EXPECT_TRUE(Accepted<HandoverView>(m.build().body())) << n;
    } else {
      EXPECT_TRUE(Rejected<HandoverView>(m.build().body(), "handover", "too many parts")) << n;
    }
  }
}

TEST(Handover, HandoverWithTooManyWordsIsRejected) {
  for (const std::uint32_t n : {kMaxWords - 1, kMaxWords, kMaxWords + 1}) {
    HandoverMsg m;
    m.fixed.device = 0;
    m.parts = {words_part(1, 0, n)};
    m.words.assign(n, 0xabcd);
    if (n <= kMaxWords) {
      EXPECT_TRUE(Accepted<HandoverView>(m.build().body())) << n;
    } else {
      EXPECT_TRUE(Rejected<HandoverView>(m.build().body(), "handover", "too many words")) << n;
    }
  }
}

TEST(Handover, TheMostPartsOrWordsOneFrameCarriesPassCheckHeaderAndDecode) {
  HandoverMsg parts;
  parts.parts.assign(kMaxParts, a_copy());
  EXPECT_TRUE(HeaderAccepted(parts.build().header()));
  EXPECT_TRUE(Accepted<HandoverView>(parts.build().body()));
  HandoverMsg words;
  words.fixed.device = 0;
  words.parts = {words_part(1, 0, kMaxWords)};
  words.words.assign(kMaxWords, 7);
  EXPECT_TRUE(HeaderAccepted(words.build().header()));
  EXPECT_TRUE(Accepted<HandoverView>(words.build().body()));
  // The bounds are what one frame carries: one more part would not fit a frame.
  EXPECT_GT(sizeof(Handover) + (std::uint64_t{kMaxParts} + 1) * sizeof(Part), kMaxControlLength);
  EXPECT_GT(sizeof(Handover) + sizeof(Part) + (std::uint64_t{kMaxWords} + 1) * 4, kMaxControlLength);
}

TEST(Handover, LengthNotMatchingTheCountsIsRejected) {
  const Encoded e = a_handover().build();
  EXPECT_TRUE(Rejected<HandoverView>(e.resized_body(1).body(), "handover", "does not match its counts"));
  EXPECT_TRUE(Rejected<HandoverView>(e.resized_body(4).body(), "handover", "does not match its counts"));
  EXPECT_TRUE(Rejected<HandoverView>(e.resized_body(-4).body(), "handover", "does not match its counts"));
  HandoverMsg m = a_handover();
  m.count_from_vectors = false;
  m.fixed.n_waits = 1;  // the tail holds 2 waits
  m.fixed.n_parts = 5;
  m.fixed.n_words = 4;
  EXPECT_TRUE(Rejected<HandoverView>(m.build().body(), "handover", "does not match its counts"));
}

TEST(Handover, WaitOnDeviceAtMaxDevicesIsRejected) {
  HandoverMsg m;
  m.waits = {Wait{kMaxDevices - 1, 0, 1}};
  EXPECT_TRUE(Accepted<HandoverView>(m.build().body()));
  m.waits = {Wait{kMaxDevices, 0, 1}};
  EXPECT_TRUE(Rejected<HandoverView>(m.build().body(), "handover", "wait on a device past the maximum"));
}

TEST(Handover, WaitWithReservedFieldSetIsRejected) {
  HandoverMsg m;
  m.waits = {Wait{1, 1, 1}};
  EXPECT_TRUE(Rejected<HandoverView>(m.build().body(), "handover", "wait with reserved"));
}

TEST(Handover, PartOnUnknownQueueIsRejected) {
  Part p = a_copy();
  p.queue = 0;
  EXPECT_TRUE(Accepted<HandoverView>(with_copy(p).build().body()));
  p.queue = 2;
  EXPECT_TRUE(Rejected<HandoverView>(with_copy(p).build().body(), "handover", "part 0: unknown queue"));
}

TEST(Handover, PartWithReservedFieldSetIsRejected) {
  Part p = a_copy();
  p.reserved = 1;
  EXPECT_TRUE(Rejected<HandoverView>(with_copy(p).build().body(), "handover", "reserved"));
}

TEST(Handover, PartOfUnknownKindIsRejected) {
  for (std::uint16_t k : {std::uint16_t{0}, std::uint16_t{3}}) {
    Part p = a_copy();
    p.kind = k;
    HandoverMsg m;
    m.parts = {a_copy(), p};
    EXPECT_TRUE(Rejected<HandoverView>(m.build().body(), "handover", "part 1: unknown kind")) << k;
  }
}

TEST(Handover, WordsPartWithReservedBytesSetIsRejected) {
  for (std::size_t i : {std::size_t{0}, std::size_t{63}}) {
    HandoverMsg m;
    m.fixed.device = 0;
    m.parts = {words_part(1, 0, 1)};
    m.parts[0].words.reserved[i] = 1;
    m.words = {5};
    EXPECT_TRUE(Rejected<HandoverView>(m.build().body(), "handover", "part 0: reserved bytes set")) << i;
  }
}

TEST(Handover, WordsPartsNotAddingUpToNWordsAreRejected) {
  HandoverMsg m;
  m.fixed.device = 0;
  m.parts = {words_part(1, 0, 2), words_part(1, 1, 1)};
  m.words = {1, 2, 3};
  EXPECT_TRUE(Accepted<HandoverView>(m.build().body()));
  m.words = {1, 2, 3, 4};  // parts take 3 of 4
  EXPECT_TRUE(Rejected<HandoverView>(m.build().body(), "handover", "do not add up"));
  m.words = {1, 2};  // parts take 3 of 2
  EXPECT_TRUE(Rejected<HandoverView>(m.build().body(), "handover", "do not add up"));
  m.parts = {words_part(1, 0, 0xffffffffu), words_part(1, 1, 3)};  // wraps in 32 bits to 2
  EXPECT_TRUE(Rejected<HandoverView>(m.build().body(), "handover", "do not add up"));
}

// ---- copy parts, through the handover decoder --------------------------------------------

TEST(CopyPart, BothSidesInTheClientAreRejected) {
  const Part p = copy_part(client_side(), client_side(), 1, 8, 8, 8);
  EXPECT_TRUE(Rejected<HandoverView>(with_copy(p).build().body(), "handover", "both sides"));
}

TEST(CopyPart, EitherSideInTheClientIsAccepted) {
  EXPECT_TRUE(Accepted<HandoverView>(
      with_copy(copy_part(client_side(), object_side(1, 0), 2, 8, 8, 8)).build().body()));
  EXPECT_TRUE(Accepted<HandoverView>(
      with_copy(copy_part(object_side(1, 0), client_side(), 2, 8, 8, 8)).build().body()));
}

TEST(CopyPart, ZeroRowsAreRejected) {
  const Part p = copy_part(object_side(1, 0), object_side(2, 0), 0, 8, 8, 8);
  EXPECT_TRUE(Rejected<HandoverView>(with_copy(p).build().body(), "handover", "row count out of range"));
}

TEST(CopyPart, RowCountBoundIsMaxRows) {
  EXPECT_TRUE(Accepted<HandoverView>(
      with_copy(copy_part(object_side(1, 0), object_side(2, 0), kMaxRows - 1, 1, 1, 1)).build().body()));
  EXPECT_TRUE(Accepted<HandoverView>(
      with_copy(copy_part(object_side(1, 0), object_side(2, 0), kMaxRows, 1, 1, 1)).build().body()));
  EXPECT_TRUE(Rejected<HandoverView>(
      with_copy(copy_part(object_side(1, 0), object_side(2, 0), kMaxRows + 1, 1, 1, 1)).build().body(),
      "handover", "row count out of range"));
}

TEST(CopyPart, ZeroRowBytesAreRejected) {
  const Part p = copy_part(object_side(1, 0), object_side(2, 0), 1, 0, 0, 0);
  EXPECT_TRUE(Rejected<HandoverView>(with_copy(p).build().body(), "handover", "empty rows"));
}

TEST(CopyPart, TotalBoundIsMaxCopyBytes) {
  auto total = [](std::uint64_t rows, std::uint64_t row_bytes) {
    return with_copy(copy_part(object_side(1, 0), object_side(2, 0), rows, row_bytes, row_bytes, row_bytes))
        .build();
  };
  EXPECT_TRUE(Accepted<HandoverView>(total(1, kMaxCopyBytes - 1).body()));
  EXPECT_TRUE(Accepted<HandoverView>(total(1, kMaxCopyBytes).body()));
  EXPECT_TRUE(Accepted<HandoverView>(total(1024, kMaxCopyBytes / 1024).body()));
  EXPECT_TRUE(Rejected<HandoverView>(total(1, kMaxCopyBytes + 1).body(), "handover", "maximum copy"));
  EXPECT_TRUE(Rejected<HandoverView>(total(2, kMaxCopyBytes / 2 + 1).body(), "handover", "maximum copy"));
  // rows * row_bytes wraps 64 bits.
  EXPECT_TRUE(Rejected<HandoverView>(total(1ull << 32, 1ull << 33).body(), "handover", "maximum copy"));
}

TEST(CopyPart, OverlappingSourcePitchIsRejected) {
  const Part p = copy_part(object_side(1, 0), object_side(2, 0), 2, 16, 15, 16);
  EXPECT_TRUE(Rejected<HandoverView>(with_copy(p).build().body(), "handover", "rows overlap"));
}

TEST(CopyPart, OverlappingDestinationPitchIsRejected) {
  const Part p = copy_part(object_side(1, 0), object_side(2, 0), 2, 16, 16, 0);
  EXPECT_TRUE(Rejected<HandoverView>(with_copy(p).build().body(), "handover", "rows overlap"));
}

TEST(CopyPart, PitchEqualToRowBytesIsAccepted) {
  EXPECT_TRUE(Accepted<HandoverView>(
      with_copy(copy_part(object_side(1, 0), object_side(2, 0), 3, 16, 16, 16)).build().body()));
}

TEST(CopyPart, SingleRowIgnoresPitch) {
  EXPECT_TRUE(Accepted<HandoverView>(
      with_copy(copy_part(object_side(1, 0), object_side(2, 0), 1, 16, 0, 3)).build().body()));
}

TEST(CopyPart, SourceRangeOverflowingSixtyFourBitsIsRejected) {
  const Side dst = object_side(2, 0);
  // (rows - 1) * pitch wraps.
  EXPECT_TRUE(Rejected<HandoverView>(
      with_copy(copy_part(object_side(1, 0), dst, 1ull << 32, 1, 1ull << 33, 1)).build().body(), "handover",
      "source range overflows"));
  // ... + row_bytes wraps.
  EXPECT_TRUE(Rejected<HandoverView>(
      with_copy(copy_part(object_side(1, 0), dst, 2, 100, kU64Max - 10, 100)).build().body(), "handover",
      "source range overflows"));
  // offset + ... wraps, by one byte; one byte less reaches exactly 2^64 - 1 and is accepted.
  EXPECT_TRUE(Rejected<HandoverView>(
      with_copy(copy_part(object_side(1, kU64Max - 4095), dst, 1, 4096, 4096, 4096)).build().body(),
      "handover", "source range overflows"));
  EXPECT_TRUE(Accepted<HandoverView>(
      with_copy(copy_part(object_side(1, kU64Max - 4096), dst, 1, 4096, 4096, 4096)).build().body()));
  // With rows: offset + (rows - 1) * pitch + row_bytes = 2^64 exactly.
  EXPECT_TRUE(Rejected<HandoverView>(
      with_copy(copy_part(object_side(1, kU64Max - 2 * 4096 - 63), dst, 3, 64, 4096, 64)).build().body(),
      "handover", "source range overflows"));
  EXPECT_TRUE(Accepted<HandoverView>(
      with_copy(copy_part(object_side(1, kU64Max - 2 * 4096 - 64), dst, 3, 64, 4096, 64)).build().body()));
}

TEST(CopyPart, DestinationRangeOverflowingSixtyFourBitsIsRejected) {
  const Side src = object_side(1, 0);
  EXPECT_TRUE(Rejected<HandoverView>(
      with_copy(copy_part(src, object_side(2, 0), 1ull << 32, 1, 1, 1ull << 33)).build().body(), "handover",
      "destination range overflows"));
  EXPECT_TRUE(Rejected<HandoverView>(
      with_copy(copy_part(src, object_side(2, 0), 2, 100, 100, kU64Max - 10)).build().body(), "handover",
      "destination range overflows"));
  EXPECT_TRUE(Rejected<HandoverView>(
      with_copy(copy_part(src, object_side(2, kU64Max), 1, 1, 1, 1)).build().body(), "handover",
      "destination range overflows"));
  EXPECT_TRUE(Accepted<HandoverView>(
      with_copy(copy_part(src, object_side(2, kU64Max - 1), 1, 1, 1, 1)).build().body()));
}

TEST(CopyPart, ClientSideWithHandleSetIsRejected) {
  Side c = client_side();
  c.handle = 5;
  EXPECT_TRUE(Rejected<HandoverView>(with_copy(copy_part(c, object_side(1, 0), 1, 8, 8, 8)).build().body(),
                                     "handover", "source side in the client's memory carries a handle"));
  EXPECT_TRUE(Rejected<HandoverView>(with_copy(copy_part(object_side(1, 0), c, 1, 8, 8, 8)).build().body(),
                                     "handover", "destination side in the client's memory carries a handle"));
}

TEST(CopyPart, ClientSideWithOffsetSetIsRejected) {
  Side c = client_side();
  c.offset = 8;
  EXPECT_TRUE(Rejected<HandoverView>(with_copy(copy_part(c, object_side(1, 0), 1, 8, 8, 8)).build().body(),
                                     "handover", "carries a handle or offset"));
}

TEST(CopyPart, SideOfUnknownKindIsRejected) {
  for (std::uint8_t k : {std::uint8_t{0}, std::uint8_t{3}, std::uint8_t{0xff}}) {
    Side s = object_side(1, 0);
    s.kind = k;
    EXPECT_TRUE(Rejected<HandoverView>(with_copy(copy_part(s, object_side(2, 0), 1, 8, 8, 8)).build().body(),
                                       "handover", "source side has unknown kind"))
        << int{k};
    EXPECT_TRUE(Rejected<HandoverView>(with_copy(copy_part(object_side(2, 0), s, 1, 8, 8, 8)).build().body(),
                                       "handover", "destination side has unknown kind"))
        << int{k};
  }
}

TEST(CopyPart, SideWithReservedBytesSetIsRejected) {
  for (std::size_t i = 0; i < 7; ++i) {
    Side s = object_side(1, 0);
    s.reserved[i] = 1;
    EXPECT_TRUE(Rejected<HandoverView>(with_copy(copy_part(s, object_side(2, 0), 1, 8, 8, 8)).build().body(),
                                       "handover", "reserved bytes set"))
        << i;
  }
}

TEST(CopyPart, RejectionNamesThePartIndex) {
  HandoverMsg m;
  m.parts = {a_copy(), a_copy(), copy_part(object_side(1, 0), object_side(2, 0), 0, 8, 8, 8)};
  EXPECT_TRUE(Rejected<HandoverView>(m.build().body(), "handover", "(part 2)"));
}

TEST(CopyPart, CheckCopyAloneAgreesWithTheDecoder) {
  std::string why;
  EXPECT_TRUE(passed(check_copy(a_copy().copy), why)) << why;
  why.clear();
  EXPECT_FALSE(passed(check_copy(copy_part(client_side(), client_side(), 1, 8, 8, 8).copy), why));
  EXPECT_NE(why.find("handover"), std::string::npos) << why;
  EXPECT_NE(why.find("both sides"), std::string::npos) << why;
  EXPECT_EQ(check_copy(copy_part(client_side(), client_side(), 1, 8, 8, 8).copy).err(), -EPROTO);
}

// =========================================================================================
// bytes
// =========================================================================================

TEST(Bytes, RoundTripKeepsEveryField) {
  const Bytes sent{3, 7, 0x0102030405060708, 1u << 22, 100, 0};
  const std::vector<std::byte> payload(100, std::byte{0x5a});
  const Encoded e = encode(MsgType::kBytes, sent, payload);
  ExpectSameHeader(e.header(), header(MsgType::kBytes, 32 + 100));
  ASSERT_EQ(check_header(e.header()), nullptr);
  Buffer fixed(e.body().first(sizeof(Bytes)));
  Bytes got{};
  std::string why;
  ASSERT_TRUE(passed(decode_bytes(fixed.bytes(), e.header().length, got), why)) << why;
  EXPECT_EQ(got.device, 3u);
  EXPECT_EQ(got.part, 7u);
  EXPECT_EQ(got.value, 0x0102030405060708u);
  EXPECT_EQ(got.offset, 1u << 22);
  EXPECT_EQ(got.length, 100u);
  EXPECT_EQ(got.reserved, 0u);
  EXPECT_EQ(e.body().subspan(sizeof(Bytes)).size(), got.length);
  EXPECT_EQ(e.body()[sizeof(Bytes)], std::byte{0x5a});
}

TEST(Bytes, EveryTruncationOfTheFixedPartIsRejected) {
  const Encoded e = bytes_fixed(Bytes{1, 0, 1, 0, 10, 0});
  ASSERT_TRUE(BytesAccepted(e.body(), 32 + 10));
  for (std::size_t n = 0; n < sizeof(Bytes); ++n) {
    EXPECT_TRUE(BytesRejected(e.body().first(n), 32 + 10, "shorter")) << n;
  }
}

TEST(Bytes, FixedPartLongerThanItsStructIsRejected) {
  EXPECT_TRUE(BytesRejected(bytes_fixed(Bytes{1, 0, 1, 0, 10, 0}).resized_body(1).body(), 32 + 10,
                            "expected exactly"));
}

TEST(Bytes, PayloadLengthBoundsAreOneToMaxChunk) {
  EXPECT_TRUE(BytesRejected(bytes_fixed(Bytes{1, 0, 1, 0, 0, 0}).body(), 32, "payload length out of range"));
  EXPECT_TRUE(BytesAccepted(bytes_fixed(Bytes{1, 0, 1, 0, 1, 0}).body(), 33));
  EXPECT_TRUE(BytesAccepted(bytes_fixed(Bytes{1, 0, 1, 0, kMaxChunk - 1, 0}).body(), 32 + kMaxChunk - 1));
  EXPECT_TRUE(BytesAccepted(bytes_fixed(Bytes{1, 0, 1, 0, kMaxChunk, 0}).body(), 32 + kMaxChunk));
  EXPECT_TRUE(BytesRejected(bytes_fixed(Bytes{1, 0, 1, 0, kMaxChunk + 1, 0}).body(), 32 + kMaxChunk + 1,
                            "payload length out of range"));
}

TEST(Bytes, FrameLengthNotMatchingThePayloadIsRejected) {
  const Encoded e = bytes_fixed(Bytes{1, 0, 1, 0, 10, 0});
  EXPECT_TRUE(BytesRejected(e.body(), 32 + 11, "frame length does not match"));
  EXPECT_TRUE(BytesRejected(e.body(), 32 + 9, "frame length does not match"));
  EXPECT_TRUE(BytesRejected(e.body(), 10, "frame length does not match"));
}

TEST(Bytes, ReservedFieldSetIsRejected) {
  EXPECT_TRUE(BytesRejected(bytes_fixed(Bytes{1, 0, 1, 0, 10, 1}).body(), 42, "reserved"));
}

TEST(Bytes, OffsetPlusLengthOverflowingIsRejected) {
  EXPECT_TRUE(BytesAccepted(bytes_fixed(Bytes{1, 0, 1, kU64Max - 10, 10, 0}).body(), 42));
  EXPECT_TRUE(BytesRejected(bytes_fixed(Bytes{1, 0, 1, kU64Max - 9, 10, 0}).body(), 42, "offset overflows"));
  EXPECT_TRUE(BytesRejected(bytes_fixed(Bytes{1, 0, 1, kU64Max, 10, 0}).body(), 42, "offset overflows"));
}

// =========================================================================================
// done, failure, close, ping
// =========================================================================================

TEST(Done, RoundTripKeepsEveryField) {
  const Encoded e = encode(MsgType::kDone, Done{5, 0, 0x0a0b0c0d0e0f1011});
  ExpectSameHeader(e.header(), header(MsgType::kDone, 16));
  ASSERT_EQ(check_header(e.header()), nullptr);
  Buffer body(e.body());
  Done got{};
  std::string why;
  ASSERT_TRUE(passed(decode(body.bytes(), got), why)) << why;
  EXPECT_EQ(got.device, 5u);
  EXPECT_EQ(got.reserved, 0u);
  EXPECT_EQ(got.value, 0x0a0b0c0d0e0f1011u);
}

TEST(Done, EveryTruncationIsRejected) {
  ExpectEveryTruncationRejected<Done>(encode(MsgType::kDone, Done{5, 0, 9}), "done");
}

TEST(Done, TrailingByteIsRejected) {
  EXPECT_TRUE(Rejected<Done>(encode(MsgType::kDone, Done{5, 0, 9}).resized_body(1).body(), "done",
                             "expected exactly"));
}

TEST(Done, ReservedFieldSetIsRejected) {
  EXPECT_TRUE(Rejected<Done>(encode(MsgType::kDone, Done{5, 1, 9}).body(), "done", "reserved"));
}

TEST(Failure, RoundTripKeepsEveryField) {
  const Encoded e = failure(kNoDevice, "device 1 caught fire");
  ExpectSameHeader(e.header(), header(MsgType::kFailure, 8 + 20));
  ASSERT_EQ(check_header(e.header()), nullptr);
  Buffer body(e.body());
  FailureView v;
  std::string why;
  ASSERT_TRUE(passed(decode(body.bytes(), v), why)) << why;
  EXPECT_EQ(v.fixed.device, kNoDevice);
  EXPECT_EQ(v.fixed.text_length, 20u);
  EXPECT_EQ(v.text, "device 1 caught fire");
  EXPECT_EQ(static_cast<const void*>(v.text.data()), body.bytes().data() + sizeof(Failure));
}

TEST(Failure, EveryTruncationIsRejected) {
  ExpectEveryTruncationRejected<FailureView>(failure(2, "out of memory"), "failure");
}

TEST(Failure, EmptyTextIsAccepted) { EXPECT_TRUE(Accepted<FailureView>(failure(0, "").body())); }

TEST(Failure, TextBoundIsMaxText) {
  EXPECT_TRUE(Accepted<FailureView>(failure(1, std::string(kMaxText - 1, 'x')).body()));
  EXPECT_TRUE(Accepted<FailureView>(failure(1, std::string(kMaxText, 'x')).body()));
  EXPECT_TRUE(Rejected<FailureView>(failure(1, std::string(kMaxText + 1, 'x')).body(), "failure", "too long"));
}

TEST(Failure, TextLengthNotMatchingTheBodyIsRejected) {
  const Encoded e = failure(1, "why");
  EXPECT_TRUE(Rejected<FailureView>(e.resized_body(1).body(), "failure", "length does not match"));
  EXPECT_TRUE(Rejected<FailureView>(e.resized_body(-1).body(), "failure", "length does not match"));
}

TEST(Close, RoundTripKeepsEveryField) {
  const Encoded e = encode(MsgType::kClose, Close{0});
  ExpectSameHeader(e.header(), header(MsgType::kClose, 8));
  ASSERT_EQ(check_header(e.header()), nullptr);
  Buffer body(e.body());
  Close got{1};
  std::string why;
  ASSERT_TRUE(passed(decode(body.bytes(), got), why)) << why;
  EXPECT_EQ(got.reserved, 0u);
}

TEST(Close, EveryTruncationIsRejected) {
  ExpectEveryTruncationRejected<Close>(encode(MsgType::kClose, Close{0}), "close");
}

TEST(Close, TrailingByteIsRejected) {
  EXPECT_TRUE(Rejected<Close>(encode(MsgType::kClose, Close{0}).resized_body(1).body(), "close",
                              "expected exactly"));
}

TEST(Close, ReservedFieldSetIsRejected) {
  EXPECT_TRUE(Rejected<Close>(encode(MsgType::kClose, Close{1}).body(), "close", "reserved"));
  EXPECT_TRUE(Rejected<Close>(encode(MsgType::kClose, Close{1ull << 63}).body(), "close", "reserved"));
}

TEST(Ping, RoundTripKeepsEveryField) {
  const Encoded e = encode(MsgType::kPing, Ping{0xfedcba9876543210});
  ExpectSameHeader(e.header(), header(MsgType::kPing, 8));
  ASSERT_EQ(check_header(e.header()), nullptr);
  Buffer body(e.body());
  Ping got{};
  std::string why;
  ASSERT_TRUE(passed(decode(body.bytes(), got), why)) << why;
  EXPECT_EQ(got.nonce, 0xfedcba9876543210u);
}

TEST(Ping, EveryTruncationIsRejected) {
  ExpectEveryTruncationRejected<Ping>(encode(MsgType::kPing, Ping{1}), "ping");
}

TEST(Ping, TrailingByteIsRejected) {
  EXPECT_TRUE(Rejected<Ping>(encode(MsgType::kPing, Ping{1}).resized_body(1).body(), "ping",
                             "expected exactly"));
}

// =========================================================================================
// Striping: kStripeGrant, kJoin, kStriped
// =========================================================================================

// Encodes a fixed-size message, checks its header, and decodes it back (failing the test if the
// decoder refuses it).
template <class M>
M RoundTrip(MsgType type, const M& sent) {
  const Encoded e = encode(type, sent);
  ExpectSameHeader(e.header(), header(type, sizeof(M)));
  Buffer body(e.body());
  M got{};
  std::string why;
  EXPECT_TRUE(passed(decode(body.bytes(), got), why)) << why;
  return got;
}

TEST(StripeGrant, RoundTripKeepsEveryField) {
  const StripeGrant got = RoundTrip(MsgType::kStripeGrant, StripeGrant{0x1122334455667788, 4, 0});
  EXPECT_EQ(got.token, 0x1122334455667788u);
  EXPECT_EQ(got.max_stripes, 4u);
}

TEST(StripeGrant, ZeroTokenCountOutOfBoundsAndReservedAreRejected) {
  EXPECT_TRUE(Rejected<StripeGrant>(encode(MsgType::kStripeGrant, StripeGrant{0, 4, 0}).body(),
                                    "stripe grant", "token 0"));
  EXPECT_TRUE(Rejected<StripeGrant>(encode(MsgType::kStripeGrant, StripeGrant{1, 0, 0}).body(),
                                    "stripe grant", "outside 1.."));
  EXPECT_TRUE(Rejected<StripeGrant>(encode(MsgType::kStripeGrant, StripeGrant{1, kMaxStripes + 1, 0}).body(),
                                    "stripe grant", "outside 1.."));
  EXPECT_TRUE(Rejected<StripeGrant>(encode(MsgType::kStripeGrant, StripeGrant{1, 2, 1}).body(),
                                    "stripe grant", "reserved"));
  ExpectEveryTruncationRejected<StripeGrant>(encode(MsgType::kStripeGrant, StripeGrant{1, 2, 0}),
                                             "stripe grant");
}

TEST(Join, RoundTripKeepsEveryField) {
  const Join got = RoundTrip(MsgType::kJoin, Join{kMagic, kVersion, 2, 3, 0, 1024, 99});
  EXPECT_EQ(got.stripe, 2u);
  EXPECT_EQ(got.count, 3u);
  EXPECT_EQ(got.min_kib, 1024u);
  EXPECT_EQ(got.token, 99u);
}

TEST(Join, BadMagicVersionStripeCountTokenOrReservedAreRejected) {
  auto rejected = [](Join j, const char* what) {
    return Rejected<Join>(encode(MsgType::kJoin, j).body(), "join", what);
  };
  EXPECT_TRUE(rejected(Join{0, kVersion, 0, 1, 0, 1, 1}, "magic"));
  EXPECT_TRUE(rejected(Join{kMagic, 1, 0, 1, 0, 1, 1}, "version 1 is not supported (this side speaks 3)"));
  EXPECT_TRUE(rejected(Join{kMagic, kVersion, 1, 1, 0, 1, 1}, "stripe 1 of 1"));
  EXPECT_TRUE(rejected(Join{kMagic, kVersion, 0, 0, 0, 1, 1}, "stripe 0 of 0"));
  EXPECT_TRUE(rejected(Join{kMagic, kVersion, 0, kMaxStripes + 1, 0, 1, 1}, "outside the bounds"));
  EXPECT_TRUE(rejected(Join{kMagic, kVersion, 0, 1, 1, 1, 1}, "reserved"));
  EXPECT_TRUE(rejected(Join{kMagic, kVersion, 0, 1, 0, 0, 1}, "threshold 0"));
  EXPECT_TRUE(rejected(Join{kMagic, kVersion, 0, 1, 0, 1, 0}, "token 0"));
}

TEST(Striped, RoundTripKeepsEveryFieldAndCutsPiecesEndToEnd) {
  const Striped got = RoundTrip(MsgType::kStriped, Striped{3, 1, 7, 4096, 10 * 1024 + 5, 4096});
  EXPECT_EQ(got.device, 3u);
  EXPECT_EQ(got.offset, 4096u);
  ASSERT_EQ(stripe_pieces(got), 3u);
  std::uint64_t next = 0;
  for (std::uint32_t i = 0; i < stripe_pieces(got); ++i) {
    const StripePiece p = stripe_piece(got, i);
    EXPECT_EQ(p.first, next);
    next += p.bytes;
  }
  EXPECT_EQ(next, got.length);
  EXPECT_EQ(stripe_piece(got, 2).bytes, 2u * 1024 + 5);
}

TEST(Striped, ZeroLengthBadPieceTooManyPiecesOrOverflowAreRejected) {
  auto rejected = [](Striped s, const char* what) {
    return Rejected<Striped>(encode(MsgType::kStriped, s).body(), "striped", what);
  };
  EXPECT_TRUE(rejected(Striped{0, 0, 1, 0, 0, 1}, "length 0"));
  EXPECT_TRUE(rejected(Striped{0, 0, 1, 0, 16, 0}, "piece size"));
  EXPECT_TRUE(rejected(Striped{0, 0, 1, 0, 16, kMaxChunk + 1}, "piece size"));
  EXPECT_TRUE(rejected(Striped{0, 0, 1, 0, kMaxStripes + 1, 1}, "more pieces"));
  EXPECT_TRUE(rejected(Striped{0, 0, 1, ~0ull, 2, 2}, "overflows"));
  ExpectEveryTruncationRejected<Striped>(encode(MsgType::kStriped, Striped{0, 0, 1, 0, 1, 1}), "striped");
}

// =========================================================================================
// fixed strings
// =========================================================================================

TEST(FixedString, SetTruncatesToThirtyOneCharactersAndPadsWithNul) {
  char field[32];
  std::memset(field, 'z', sizeof field);
  set_fixed_string(field, std::string(40, 'a'));
  EXPECT_EQ(fixed_string(field), std::string(31, 'a'));
  EXPECT_EQ(field[31], 0);
  set_fixed_string(field, "ab");
  EXPECT_EQ(fixed_string(field), "ab");
  for (std::size_t i = 2; i < sizeof field; ++i) EXPECT_EQ(field[i], 0) << i;
}

TEST(FixedString, UnterminatedFieldReadsAsEmpty) {
  char field[32];
  std::memset(field, 'q', sizeof field);
  EXPECT_EQ(fixed_string(field), "");
}

// =========================================================================================
// kStatusQuery, kStatus (kFeatureStatus)
// =========================================================================================

Encoded status(std::uint64_t id, std::string_view text) {
  Framed<Status> f{};
  std::string why;
  EXPECT_TRUE(passed(encode_status(id, text, f), why)) << why;
  Encoded e;
  e.frame.resize(sizeof f + text.size());
  std::memcpy(e.frame.data(), &f, sizeof f);
  std::memcpy(e.frame.data() + sizeof f, text.data(), text.size());
  return e;
}

TEST(StatusQuery, TheEncoderMakesWhatTheDecoderReads) {
  const auto f = encode_status_query(42);
  EXPECT_EQ(f.header.length, 16u);
  EXPECT_EQ(f.header.type, static_cast<std::uint16_t>(MsgType::kStatusQuery));
  EXPECT_EQ(offsetof(StatusQuery, reserved), 8u);
  Encoded e;
  e.frame.resize(sizeof f);
  std::memcpy(e.frame.data(), &f, sizeof f);
  Buffer b(e.body());
  StatusQuery q{};
  std::string why;
  ASSERT_TRUE(passed(decode(b.bytes(), q), why)) << why;
  EXPECT_EQ(q.id, 42u);
  ExpectEveryTruncationRejected<StatusQuery>(e, "status query");
}

TEST(StatusQuery, IdZeroAndReservedBitsAreRejected) {
  EXPECT_TRUE(Rejected<StatusQuery>(encode(MsgType::kStatusQuery, StatusQuery{0, 0}).body(), "status query", "id 0"));
  EXPECT_TRUE(
      Rejected<StatusQuery>(encode(MsgType::kStatusQuery, StatusQuery{1, 1}).body(), "status query", "reserved"));
}

TEST(Status, RoundTripKeepsTheIdAndTheText) {
  const Encoded e = status(7, R"({"agent": "rig-agent"})");
  ExpectSameHeader(e.header(), header(MsgType::kStatus, 16 + 22));
  EXPECT_EQ(offsetof(Status, text_length), 8u);
  EXPECT_EQ(offsetof(Status, reserved), 12u);
  Buffer b(e.body());
  StatusView v{};
  std::string why;
  ASSERT_TRUE(passed(decode(b.bytes(), v), why)) << why;
  EXPECT_EQ(v.fixed.id, 7u);
  EXPECT_EQ(v.text, R"({"agent": "rig-agent"})");
  ExpectEveryTruncationRejected<StatusView>(e, "status");
}

TEST(Status, TextBoundIsMaxStatusTextOnBothSides) {
  EXPECT_TRUE(Accepted<StatusView>(status(1, std::string(kMaxStatusText, 'x')).body()));
  EXPECT_TRUE(Rejected<StatusView>(
      encode(MsgType::kStatus, Status{1, kMaxStatusText + 1, 0}, Tail().add_text(std::string(kMaxStatusText + 1, 'x')))
          .body(),
      "status", "longer than 65536"));
  Framed<Status> f{};
  std::string why;
  EXPECT_FALSE(passed(encode_status(1, std::string(kMaxStatusText + 1, 'x'), f), why));
  EXPECT_NE(why.find("outside 1..65536"), std::string::npos) << why;
  EXPECT_FALSE(passed(encode_status(1, "", f), why));
  EXPECT_FALSE(passed(encode_status(0, "{}", f), why));
  // The caller's own mistake, not a peer's: -EINVAL, never the -EPROTO of a violation.
  EXPECT_EQ(encode_status(0, "{}", f).err(), -EINVAL);
  EXPECT_EQ(encode_status(1, "", f).err(), -EINVAL);
}

TEST(Status, IdZeroEmptyTextReservedBitsAndALengthNotMatchingTheTextAreRejected) {
  EXPECT_TRUE(Rejected<StatusView>(encode(MsgType::kStatus, Status{0, 2, 0}, Tail().add_text("{}")).body(), "status",
                                   "id 0"));
  EXPECT_TRUE(Rejected<StatusView>(encode(MsgType::kStatus, Status{1, 0, 0}).body(), "status", "empty text"));
  EXPECT_TRUE(Rejected<StatusView>(encode(MsgType::kStatus, Status{1, 2, 1}, Tail().add_text("{}")).body(), "status",
                                   "reserved"));
  EXPECT_TRUE(Rejected<StatusView>(encode(MsgType::kStatus, Status{1, 3, 0}, Tail().add_text("{}")).body(), "status",
                                   "does not match"));
  EXPECT_TRUE(Rejected<StatusView>(encode(MsgType::kStatus, Status{1, 2, 0}, Tail().add_text("{}x")).body(), "status",
                                   "does not match"));
}

}  // namespace
}  // namespace rig::wire
