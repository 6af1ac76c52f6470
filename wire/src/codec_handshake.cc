// The decoders of the handshake's messages (wire/PROTOCOL.md 6.1): hello, challenge, proof,
// welcome, and a stripe's grant and join.
#include <cstring>
#include <string>

#include "decode_support.h"
#include "rig/wire/codec.h"

namespace rig::wire {

using namespace decoding;

Outcome decode(std::span<const std::byte> body, Hello& out) {
  RIG_RETURN_IF_FAILED(exact(body, out, "hello"));
  if (out.magic != kMagic) return fail("hello", "bad magic (not a rig-remote peer)");
  if (out.version != kVersion) {
    return fail("hello", "protocol version " + std::to_string(out.version) +
                             " is not supported (this side speaks " +
                             std::to_string(kVersion) + ")");
  }
  if (out.reserved != 0 || out.reserved2 != 0) return fail("hello", "reserved fields set");
  return {};
}

Outcome decode(std::span<const std::byte> body, WelcomeView& out) {
  // The receiver's own bug, not the peer's: -EFAULT, never a violation.
  if (!aligned(body)) return Outcome::failed(-EFAULT, "welcome: body not 8-byte aligned (receiver bug)");
  RIG_RETURN_IF_FAILED(read_fixed(body, out.fixed, "welcome"));
  const Welcome& w = out.fixed;
  if (w.magic != kMagic) return fail("welcome", "bad magic (not a rig-agent)");
  if (w.version != kVersion) {
    return fail("welcome", "protocol version " + std::to_string(w.version) +
                               " is not supported (this side speaks " + std::to_string(kVersion) + ")");
  }
  if (w.auth > 1) return fail("welcome", "auth field neither 0 nor 1");
  if (w.auth == 0 && std::any_of(std::begin(w.mac), std::end(w.mac), [](std::uint8_t b) { return b != 0; })) {
    return fail("welcome", "an open agent's welcome carries a MAC");
  }
  if (w.n_accounts == 0 || w.n_accounts > kMaxDevices) {
    return fail("welcome", "account count " + std::to_string(w.n_accounts) +
                               " outside 1.." + std::to_string(kMaxDevices));
  }
  if (body.size() != sizeof(Welcome) + std::size_t{w.n_accounts} * sizeof(Account)) {
    return fail("welcome", "length does not match " + std::to_string(w.n_accounts) +
                               " accounts");
  }
  out.accounts = view_of<Account>(body, sizeof(Welcome), w.n_accounts);
  std::int64_t last = -1;
  for (const Account& a : out.accounts) {
    const std::string who = "account " + std::to_string(a.id);
    if (a.id >= kMaxDevices) return fail("welcome", who + ": id past the maximum device");
    if (static_cast<std::int64_t>(a.id) <= last) {
      return fail("welcome", who + ": ids are not strictly increasing");
    }
    last = a.id;
    const auto kind = static_cast<AccountKind>(a.kind);
    if (kind != AccountKind::kHost && kind != AccountKind::kDevice) {
      return fail("welcome", who + ": unknown kind");
    }
    if ((kind == AccountKind::kHost) != (a.id == 0)) {
      return fail("welcome", who + ": the machine's host, and only it, has id 0");
    }
    if (!terminated(a.name) || !terminated(a.arch)) {
      return fail("welcome", who + ": name or arch not NUL-terminated");
    }
    if (a.name[0] == 0) return fail("welcome", who + ": empty name");
  }
  if (out.accounts.front().id != 0) {
    return fail("welcome", "the machine's host (account 0) is missing");
  }
  return {};
}

Outcome decode(std::span<const std::byte> body, StripeGrant& out) {
  RIG_RETURN_IF_FAILED(exact(body, out, "stripe grant"));
  if (out.token == 0) return fail("stripe grant", "token 0");
  if (out.max_stripes == 0 || out.max_stripes > kMaxStripes) {
    return fail("stripe grant", "stripe count " + std::to_string(out.max_stripes) + " outside 1.." +
                                    std::to_string(kMaxStripes));
  }
  if (out.reserved != 0) return fail("stripe grant", "reserved field set");
  return {};
}

Outcome decode(std::span<const std::byte> body, Join& out) {
  RIG_RETURN_IF_FAILED(exact(body, out, "join"));
  if (out.magic != kMagic) return fail("join", "bad magic (not a rig-remote peer)");
  if (out.version != kVersion) {
    return fail("join", "protocol version " + std::to_string(out.version) +
                            " is not supported (this side speaks " + std::to_string(kVersion) + ")");
  }
  if (out.count == 0 || out.count > kMaxStripes || out.stripe >= out.count) {
    return fail("join", "stripe " + std::to_string(out.stripe) + " of " + std::to_string(out.count) +
                            " outside the bounds (count 1.." + std::to_string(kMaxStripes) + ")");
  }
  if (out.reserved != 0) return fail("join", "reserved field set");
  if (out.min_kib == 0) return fail("join", "threshold 0");
  if (out.token == 0) return fail("join", "token 0");
  return {};
}

Outcome decode(std::span<const std::byte> body, Challenge& out) {
  RIG_RETURN_IF_FAILED(exact(body, out, "challenge"));
  if (out.auth > 1) return fail("challenge", "auth field neither 0 nor 1");
  if (out.reserved != 0) return fail("challenge", "reserved field set");
  if (out.name[0] == 0 || std::memchr(out.name, 0, sizeof out.name) == nullptr) {
    return fail("challenge", "the agent's name is empty or not NUL-terminated");
  }
  return {};
}

Outcome decode(std::span<const std::byte> body, Proof& out) {
  return exact(body, out, "proof");
}

}  // namespace rig::wire
