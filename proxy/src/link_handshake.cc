#include "link_handshake.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

#include "rig/engine/iov_cursor.h"
#include "rig/engine/tcp.h"
#include "rig/wire/codec.h"

namespace rig::remote {
namespace {

// Receives exactly n bytes within the handshake's time, or throws naming `what` (the
// handshake, or a stripe's join).
void recv_exact(int fd, void* buf, std::size_t n, const std::string& what, const std::string& endpoint) {
  const int rc = engine::recv_within(fd, buf, n, kHandshakeTimeoutMs);
  if (rc == -ETIME) {
    throw std::runtime_error(what + " with agent " + endpoint + ": no answer within " +
                             std::to_string(kHandshakeTimeoutMs) + " ms");
  }
  if (rc == -ECONNRESET) throw std::runtime_error(what + " with agent " + endpoint + ": connection closed");
  if (rc != 0) throw std::system_error(-rc, std::generic_category(), what + " with agent " + endpoint);
}

// Reads one frame: its header and its body (8-byte aligned). A kFailure is the agent's
// refusal: thrown with its text; any type but `want` is an error.
std::vector<std::uint64_t> recv_frame(int fd, wire::MsgType want, wire::FrameHeader& h, const std::string& what,
                                      const std::string& endpoint) {
  recv_exact(fd, &h, sizeof h, what, endpoint);
  if (const char* bad = wire::check_header(h)) throw std::runtime_error(what + " with agent " + endpoint + ": " + bad);
  if (h.type == static_cast<std::uint16_t>(wire::MsgType::kFailure) && h.length <= 8 + wire::kMaxText) {
    std::vector<std::uint64_t> body((h.length + 7) / 8);
    recv_exact(fd, body.data(), h.length, what, endpoint);
    wire::FailureView f;
    const wire::Outcome decoded = wire::decode({reinterpret_cast<const std::byte*>(body.data()), h.length}, f);
    if (decoded.ok()) {
      throw std::runtime_error("agent " + endpoint + " refused the " +
                               (what == "handshake" ? std::string("job") : what) + ": " + std::string(f.text));
    }
    throw std::runtime_error(what + " with agent " + endpoint + ": " + decoded.why());
  }
  if (h.type != static_cast<std::uint16_t>(want)) {
    throw std::runtime_error(what + " with agent " + endpoint + ": expected " +
                             wire::type_name(static_cast<std::uint16_t>(want)) + ", got " + wire::type_name(h.type));
  }
  std::vector<std::uint64_t> body((h.length + 7) / 8);
  recv_exact(fd, body.data(), h.length, what, endpoint);
  return body;
}

// Reads a frame of type `want` and decodes it into `out` (a fixed message).
template <class M>
void recv_message(int fd, wire::MsgType want, M& out, const std::string& what, const std::string& endpoint) {
  wire::FrameHeader h{};
  const std::vector<std::uint64_t> body = recv_frame(fd, want, h, what, endpoint);
  if (const wire::Outcome o = wire::decode({reinterpret_cast<const std::byte*>(body.data()), h.length}, out); !o.ok()) {
    throw std::runtime_error(what + " with agent " + endpoint + ": " + o.why());
  }
}

template <class M>
void send_message(int fd, const M& msg, const std::string& what, const std::string& endpoint) {
  const auto f = wire::encode(msg);
  const iovec iov = engine::to_iov(&f, sizeof f);
  if (const int rc = engine::send_within(fd, {&iov, 1}, kHandshakeTimeoutMs); rc != 0) {
    throw std::system_error(rc == -ETIME ? ETIMEDOUT : -rc, std::generic_category(), what + " with agent " + endpoint);
  }
}

// The challenge's answer: the MAC `mac`, after checking that the agent authenticates exactly
// when this side holds a secret.
void answer_challenge(int fd, const wire::Challenge& c, bool have_secret, const wire::Mac& mac,
                      const std::string& what, const std::string& endpoint) {
  if (c.auth == 1 && !have_secret) {
    throw std::runtime_error(what + " with agent " + endpoint +
                             ": the agent requires authentication: give the job its secret "
                             "(LinkOptions::secret_file, RIG_SECRET_FILE or RIG_SECRET)");
  }
  if (c.auth == 0 && have_secret) {
    throw std::runtime_error(what + " with agent " + endpoint +
                             ": the agent runs without a secret, so it cannot prove who it is: refused");
  }
  wire::Proof p{};
  std::copy(mac.begin(), mac.end(), p.mac);
  send_message(fd, p, what, endpoint);
}

// An open agent proves nothing, so a job without a secret takes one only where no one else can
// answer: on loopback.
void refuse_open_agent_off_loopback(const wire::Challenge& c, bool have_secret, const engine::Address& reached,
                                    const std::string& endpoint) {
  if (c.auth != 0 || have_secret || engine::is_loopback(reached)) return;
  throw std::runtime_error("handshake with agent " + endpoint + ": the agent runs without a secret at " +
                           engine::to_string(reached) +
                           ", which is not loopback: anyone who answers there could pose as it: refused "
                           "(run the agent with a secret and give the job the same one: "
                           "LinkOptions::secret_file, RIG_SECRET_FILE or RIG_SECRET)");
}

}  // namespace

Greeting greet(int fd, std::uint32_t offer, const std::optional<engine::Secret>& secret, const std::string& endpoint,
               const engine::Address& reached, const std::string& pinned) {
  const std::string what = "handshake";
  wire::Transcript t;
  t.offered = offer;
  t.client = wire::fresh_nonce();
  wire::Hello hello{wire::kMagic, wire::kVersion, 0, offer, 0};
  std::copy(t.client.begin(), t.client.end(), hello.nonce);
  send_message(fd, hello, what, endpoint);
  wire::Challenge c{};
  recv_message(fd, wire::MsgType::kChallenge, c, what, endpoint);
  t.agent = wire::to_array(c.nonce);
  t.name = wire::to_array(c.name);
  const std::string name(wire::fixed_string(c.name));
  if (!pinned.empty() && name != pinned) {
    throw std::runtime_error("handshake with agent " + endpoint + ": the agent is named '" + name + "', not '" +
                             pinned + "' as the job pinned (LinkOptions::agent_name): refused");
  }
  refuse_open_agent_off_loopback(c, secret.has_value(), reached, endpoint);
  const wire::SecretBytes key = secret ? wire::SecretBytes(secret->bytes) : wire::SecretBytes();
  answer_challenge(fd, c, secret.has_value(), secret ? wire::client_proof(key, t) : wire::Mac{}, what, endpoint);

  wire::FrameHeader h{};
  const std::vector<std::uint64_t> body = recv_frame(fd, wire::MsgType::kWelcome, h, what, endpoint);
  wire::WelcomeView welcome;
  if (const wire::Outcome o = wire::decode({reinterpret_cast<const std::byte*>(body.data()), h.length}, welcome);
      !o.ok()) {
    throw std::runtime_error("handshake with agent " + endpoint + ": " + o.why());
  }
  if (welcome.fixed.auth != c.auth ||
      (secret && !wire::same_mac(wire::agent_proof(key, t, welcome.fixed.features, welcome.accounts),
                                 wire::to_array(welcome.fixed.mac)))) {
    throw std::runtime_error("handshake with agent " + endpoint +
                             ": authentication failed (the agent's proof does not match this job's secret)");
  }
  if ((welcome.fixed.features & ~offer) != 0) {
    throw std::runtime_error("handshake with agent " + endpoint + ": it accepted features never offered");
  }
  Greeting g;
  g.accounts.assign(welcome.accounts.begin(), welcome.accounts.end());
  g.features = welcome.fixed.features;
  g.agent_name = name;
  g.key = wire::job_key(key, t);
  if ((g.features & wire::kFeatureStripes) != 0) {
    g.grant.emplace();
    recv_message(fd, wire::MsgType::kStripeGrant, *g.grant, what, endpoint);
  }
  return g;
}

void join(int fd, const wire::Join& j, const wire::JobKey& key, const std::string& what, const std::string& endpoint) {
  send_message(fd, j, what, endpoint);
  wire::Challenge c{};
  recv_message(fd, wire::MsgType::kChallenge, c, what, endpoint);
  wire::Proof p{};
  const wire::Mac mac = wire::join_proof(key, j, wire::to_array(c.nonce));
  std::copy(mac.begin(), mac.end(), p.mac);
  send_message(fd, p, what, endpoint);
  wire::FrameHeader h{};
  const std::vector<std::uint64_t> echo = recv_frame(fd, wire::MsgType::kJoin, h, what, endpoint);
  if (h.length != sizeof j || std::memcmp(echo.data(), &j, sizeof j) != 0) {
    throw std::runtime_error(what + " with agent " + endpoint + ": the join was not echoed");
  }
}

// std::system_error adds ": " and the errno's text to what() itself; the reason has them already.
void throw_system_error(const wire::Outcome& o) {
  std::string what = o.why();
  const std::string errno_text = ": " + std::generic_category().message(-o.err());
  if (what.ends_with(errno_text)) what.resize(what.size() - errno_text.size());
  throw std::system_error(-o.err(), std::generic_category(), what);
}

int connect_to(const std::string& endpoint, engine::Address& reached) {
  const wire::Result<engine::Endpoint> ep = engine::parse_endpoint(endpoint);
  if (!ep.ok()) throw std::invalid_argument(ep.outcome().why());
  const wire::Result<std::vector<engine::Address>> addresses = engine::resolve(*ep, engine::Use::kConnect);
  if (!addresses.ok()) throw std::runtime_error(addresses.outcome().why());
  const wire::Result<int> fd = engine::tcp_connect_first(*addresses, engine::to_string(*ep), reached);
  if (!fd.ok()) throw_system_error(fd.outcome());
  return *fd;
}

std::optional<engine::Secret> secret_of(const std::string& secret_file) {
  if (secret_file.empty()) {
    wire::Result<std::optional<engine::Secret>> s = engine::secret_from_env();
    if (!s.ok()) throw std::runtime_error(s.outcome().why());
    return std::move(*s);
  }
  wire::Result<engine::Secret> s = engine::read_secret_file(secret_file);
  if (!s.ok()) throw std::runtime_error(s.outcome().why());
  return std::move(*s);
}

}  // namespace rig::remote
