// libFuzzer target: arbitrary bytes as one frame of protocol v1 (an 8-byte header, then the
// body) into check_header and every decoder. The body is copied into an exactly sized, 8-byte
// aligned buffer first, as a receiver does. Nothing may crash or read out of bounds, every
// rejection must say why, and whatever is accepted must satisfy what wire/PROTOCOL.md promises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <string>

#include "rig/wire/codec.h"

namespace {

using namespace rig::wire;

void check(bool condition) {
  if (!condition) std::abort();
}

// The span lies inside the body.
template <class T>
bool inside(std::span<const T> s, std::span<const std::byte> body) {
  if (s.empty()) return true;
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return p >= body.data() && p + s.size_bytes() <= body.data() + body.size();
}

// Decodes with a fresh `why`; a rejection must carry a reason naming the message.
template <class View>
bool accepted(std::span<const std::byte> body, View& out, const char* name) {
  std::string why;
  if (passed(decode(body, out), why)) return true;
  check(!why.empty() && why.find(name) != std::string::npos);
  return false;
}

bool terminated(const char (&field)[32]) { return std::memchr(field, 0, sizeof field) != nullptr; }

// An object side's range [offset, offset + (rows - 1) * pitch + row_bytes) fits in 64 bits.
bool range_fits(const Side& s, const CopyPart& c, std::uint64_t pitch) {
  if (s.kind != static_cast<std::uint8_t>(SideKind::kObject)) return true;
  std::uint64_t span = 0, end = 0;
  return !__builtin_mul_overflow(c.rows - 1, pitch, &span) &&
         !__builtin_add_overflow(span, c.row_bytes, &span) &&
         !__builtin_add_overflow(s.offset, span, &end);
}

void check_accepted_copy(const CopyPart& c) {
  std::string why;
  check(passed(check_copy(c), why));
  const bool src_client = c.src.kind == static_cast<std::uint8_t>(SideKind::kClient);
  const bool dst_client = c.dst.kind == static_cast<std::uint8_t>(SideKind::kClient);
  check(!(src_client && dst_client));
  check(c.rows >= 1 && c.rows <= kMaxRows && c.row_bytes >= 1);
  check(packed_bytes(c) / c.rows == c.row_bytes && packed_bytes(c) <= kMaxCopyBytes);
  check(c.rows == 1 || (c.src_pitch >= c.row_bytes && c.dst_pitch >= c.row_bytes));
  check(range_fits(c.src, c, c.src_pitch) && range_fits(c.dst, c, c.dst_pitch));
  if (src_client) check(c.src.handle == 0 && c.src.offset == 0);
  if (dst_client) check(c.dst.handle == 0 && c.dst.offset == 0);
}

void check_header_verdict(const FrameHeader& h) {
  const char* bad = check_header(h);
  if (bad != nullptr) {
    check(*bad != 0);
    return;
  }
  check(h.type >= 1 && h.type <= kMaxMsgType && h.flags == 0);
  const auto type = static_cast<MsgType>(h.type);
  check(h.length >= fixed_size(type));
  if (type == MsgType::kBytes) {
    check(h.length > sizeof(Bytes) && h.length - sizeof(Bytes) <= kMaxChunk);
  } else {
    check(h.length <= kMaxControlLength);
  }
}

void decode_everything(std::span<const std::byte> body, std::uint32_t frame_length) {
  const std::size_t n = body.size();
  {
    Hello x{};
    if (accepted(body, x, "hello")) {
      check(n == sizeof x && x.magic == kMagic && x.version == kVersion);
      check(x.reserved == 0 && x.reserved2 == 0);
    }
  }
  {
    Challenge x{};
    if (accepted(body, x, "challenge")) check(n == sizeof x && x.auth <= 1 && x.reserved == 0);
  }
  {
    Proof x{};
    if (accepted(body, x, "proof")) check(n == sizeof x);
  }
  {
    WelcomeView v;
    if (accepted(body, v, "welcome")) {
      check(v.fixed.magic == kMagic && v.fixed.version == kVersion && v.fixed.auth <= 1);
      check(v.fixed.n_accounts >= 1 && v.fixed.n_accounts <= kMaxDevices);
      check(v.accounts.size() == v.fixed.n_accounts && inside(v.accounts, body));
      check(n == sizeof(Welcome) + v.accounts.size_bytes());
      check(v.accounts[0].id == 0 && v.accounts[0].kind == static_cast<std::uint32_t>(AccountKind::kHost));
      for (std::size_t i = 0; i < v.accounts.size(); ++i) {
        const Account& a = v.accounts[i];
        check(a.id < kMaxDevices && (i == 0 || a.id > v.accounts[i - 1].id));
        check(terminated(a.name) && terminated(a.arch) && a.name[0] != 0);
        check((a.kind == static_cast<std::uint32_t>(AccountKind::kHost)) == (a.id == 0));
        check(a.kind <= static_cast<std::uint32_t>(AccountKind::kDevice));
      }
    }
  }
  {
    RequestView v;
    if (accepted(body, v, "request")) {
      check(v.fixed.kind >= 1 && v.fixed.kind <= kMaxRequestKind);
      check(v.fixed.reserved == 0 && v.fixed.reserved2 == 0);
      check(v.tail.size() == v.fixed.tail_length && inside(v.tail, body));
      check(n == sizeof(Request) + v.tail.size());
      switch (static_cast<RequestKind>(v.fixed.kind)) {
        case RequestKind::kAlloc:
        case RequestKind::kMapPeer: check(v.tail.empty()); break;
        case RequestKind::kImage: check(!v.tail.empty() && v.tail.size() <= kMaxImage); break;
        case RequestKind::kEntry:
        case RequestKind::kPrepare: check(!v.tail.empty() && v.tail.size() <= kMaxName); break;
      }
    }
  }
  {
    AnswerView v;
    if (accepted(body, v, "answer")) {
      check(v.fixed.status <= kMaxAnswerStatus && v.fixed.reserved == 0);
      check(v.text.size() == v.fixed.text_length && v.text.size() <= kMaxText);
      check(inside(std::span<const char>(v.text.data(), v.text.size()), body));
      check(n == sizeof(Answer) + v.text.size());
    }
  }
  {
    Release x{};
    if (accepted(body, x, "release")) {
      check(n == sizeof x && x.reserved == 0 && x.reserved2 == 0);
      check(x.kind == static_cast<std::uint16_t>(ReleaseKind::kObject) ||
            x.kind == static_cast<std::uint16_t>(ReleaseKind::kImage));
    }
  }
  {
    HandoverView v;
    if (accepted(body, v, "handover")) {
      const Handover& h = v.fixed;
      check(h.device < kMaxDevices);
      check(h.n_waits <= kMaxWaits && h.n_parts <= kMaxParts && h.n_words <= kMaxWords);
      check(v.waits.size() == h.n_waits && v.parts.size() == h.n_parts && v.words.size() == h.n_words);
      check(inside(v.waits, body) && inside(v.parts, body) && inside(v.words, body));
      check(n == sizeof(Handover) + v.waits.size_bytes() + v.parts.size_bytes() + v.words.size_bytes());
      for (const Wait& w : v.waits) check(w.device < kMaxDevices && w.reserved == 0);
      std::uint64_t words = 0;
      for (const Part& p : v.parts) {
        check(p.queue <= 1 && p.reserved == 0);
        if (p.kind == static_cast<std::uint16_t>(PartKind::kCopy)) {
          check_accepted_copy(p.copy);
        } else {
          check(p.kind == static_cast<std::uint16_t>(PartKind::kWords));
          for (auto r : p.words.reserved) check(r == 0);
          words += p.words.n_words;
        }
      }
      check(words == h.n_words);
      // The launches take their words in part order without running past the tail.
      std::uint64_t first = 0;
      for (const Part& p : v.parts) {
        if (p.kind != static_cast<std::uint16_t>(PartKind::kWords)) continue;
        const auto taken = v.words.subspan(first, p.words.n_words);
        check(inside(taken, body));
        first += p.words.n_words;
      }
    }
  }
  {
    Done x{};
    if (accepted(body, x, "done")) check(n == sizeof x && x.reserved == 0);
  }
  {
    FailureView v;
    if (accepted(body, v, "failure")) {
      check(v.text.size() == v.fixed.text_length && v.text.size() <= kMaxText);
      check(inside(std::span<const char>(v.text.data(), v.text.size()), body));
      check(n == sizeof(Failure) + v.text.size());
    }
  }
  {
    Close x{};
    if (accepted(body, x, "close")) check(n == sizeof x && x.reserved == 0);
  }
  {
    Ping x{};
    if (accepted(body, x, "ping")) check(n == sizeof x);
  }
  {
    StripeGrant x{};
    if (accepted(body, x, "stripe grant")) {
      check(n == sizeof x && x.token != 0 && x.max_stripes >= 1 && x.max_stripes <= kMaxStripes);
    }
  }
  {
    Join x{};
    if (accepted(body, x, "join")) check(n == sizeof x && x.stripe < x.count && x.count <= kMaxStripes && x.min_kib >= 1);
  }
  {
    Striped x{};
    if (accepted(body, x, "striped")) {
      check(n == sizeof x && x.piece >= 1 && x.piece <= kMaxChunk && stripe_pieces(x) <= kMaxStripes);
      std::uint64_t total = 0;
      for (std::uint32_t i = 0; i < stripe_pieces(x); ++i) total += stripe_piece(x, i).bytes;
      check(total == x.length);
    }
  }
  {
    StatusQuery x{};
    if (accepted(body, x, "status query")) check(n == sizeof x && x.id != 0 && x.reserved == 0);
  }
  {
    StatusView v;
    if (accepted(body, v, "status")) {
      check(v.fixed.id != 0 && v.fixed.reserved == 0);
      check(v.text.size() == v.fixed.text_length && v.text.size() >= 1 && v.text.size() <= kMaxStatusText);
      check(inside(std::span<const char>(v.text.data(), v.text.size()), body));
      check(n == sizeof(Status) + v.text.size());
    }
  }
  {
    // kBytes: the receiver reads only the fixed part; the payload stays on the stream.
    Bytes b{};
    std::string why;
    if (passed(decode_bytes(body, frame_length, b), why)) {
      check(n == sizeof(Bytes) && b.reserved == 0);
      check(b.length >= 1 && b.length <= kMaxChunk && frame_length == sizeof(Bytes) + b.length);
      std::uint64_t end = 0;
      check(!__builtin_add_overflow(b.offset, std::uint64_t{b.length}, &end));
    } else {
      check(!why.empty() && why.find("bytes") != std::string::npos);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < sizeof(FrameHeader)) return 0;
  FrameHeader h{};
  std::memcpy(&h, data, sizeof h);
  check_header_verdict(h);

  // The body as a receiver holds it: exactly its bytes, 8-byte aligned.
  const std::size_t n = size - sizeof h;
  auto* body = static_cast<std::byte*>(::operator new(n, std::align_val_t{8}));
  if (n > 0) std::memcpy(body, data + sizeof h, n);
  decode_everything({body, n}, h.length);
  ::operator delete(body, std::align_val_t{8});
  return 0;
}
