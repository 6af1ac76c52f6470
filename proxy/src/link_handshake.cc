#include "link_handshake.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "rig/engine/iov_cursor.h"
#include "rig/engine/tcp.h"
#include "rig/wire/codec.h"

namespace rig::remote {
namespace {

// Receives exactly n bytes within the handshake's time.
wire::Outcome recv_exact(int fd, void* buf, std::size_t n) {
  const int rc = engine::recv_within(fd, buf, n, kHandshakeTimeoutMs);
  if (rc == -ETIME) {
    return wire::Outcome::failed(-ETIMEDOUT, "no answer within " + std::to_string(kHandshakeTimeoutMs) + " ms");
  }
  if (rc == -ECONNRESET) return wire::Outcome::failed(rc, "connection closed");
  if (rc != 0) return wire::Outcome::failed(rc, std::strerror(-rc));
  return {};
}

// Reads one frame: its header and its body (8-byte aligned) into `body`. A kFailure is the
// agent's refusal (wire::kPeerEnded, its text); any type but `want` is a violation.
wire::Outcome recv_frame(int fd, wire::MsgType want, wire::FrameHeader& h, std::vector<std::uint64_t>& body) {
  RIG_RETURN_IF_FAILED(recv_exact(fd, &h, sizeof h));
  if (const char* bad = wire::check_header(h)) return wire::violation(bad);
  const bool refusal = h.type == static_cast<std::uint16_t>(wire::MsgType::kFailure) && h.length <= 8 + wire::kMaxText;
  if (!refusal && h.type != static_cast<std::uint16_t>(want)) {
    return wire::violation(std::string("expected ") + wire::type_name(static_cast<std::uint16_t>(want)) + ", got " +
                           wire::type_name(h.type));
  }
  body.assign((h.length + 7) / 8, 0);
  RIG_RETURN_IF_FAILED(recv_exact(fd, body.data(), h.length));
  if (!refusal) return {};
  wire::FailureView f;
  RIG_RETURN_IF_FAILED(wire::decode({reinterpret_cast<const std::byte*>(body.data()), h.length}, f));
  return wire::Outcome::failed(wire::kPeerEnded, std::string(f.text));
}

// Reads a frame of type `want` and decodes it into `out` (a fixed message).
template <class M>
wire::Outcome recv_message(int fd, wire::MsgType want, M& out) {
  wire::FrameHeader h{};
  std::vector<std::uint64_t> body;
  RIG_RETURN_IF_FAILED(recv_frame(fd, want, h, body));
  return wire::decode({reinterpret_cast<const std::byte*>(body.data()), h.length}, out);
}

template <class M>
wire::Outcome send_message(int fd, const M& msg) {
  const auto f = wire::encode(msg);
  const iovec iov = engine::to_iov(&f, sizeof f);
  if (const int rc = engine::send_within(fd, {&iov, 1}, kHandshakeTimeoutMs); rc != 0) {
    const int err = rc == -ETIME ? -ETIMEDOUT : rc;
    return wire::Outcome::failed(err, std::strerror(-err));
  }
  return {};
}

// An agent that cannot prove who it is, or proves it is another: -EACCES and why.
wire::Outcome refused_agent(std::string why) { return wire::Outcome::failed(-EACCES, std::move(why)); }

// The challenge's answer: the MAC `mac`, after checking that the agent authenticates exactly
// when this side holds a secret.
wire::Outcome answer_challenge(int fd, const wire::Challenge& c, bool have_secret, const wire::Mac& mac) {
  if (c.auth == 1 && !have_secret) {
    return refused_agent(
        "the agent requires authentication: give the job its secret "
        "(LinkOptions::secret_file, RIG_SECRET_FILE or RIG_SECRET)");
  }
  if (c.auth == 0 && have_secret) {
    return refused_agent("the agent runs without a secret, so it cannot prove who it is: refused");
  }
  wire::Proof p{};
  std::copy(mac.begin(), mac.end(), p.mac);
  return send_message(fd, p);
}

// An open agent proves nothing, so a job without a secret takes one only where no one else can
// answer: on loopback.
wire::Outcome refuse_open_agent_off_loopback(const wire::Challenge& c, bool have_secret,
                                             const engine::Address& reached) {
  if (c.auth != 0 || have_secret || engine::is_loopback(reached)) return {};
  return refused_agent("the agent runs without a secret at " + engine::to_string(reached) +
                       ", which is not loopback: anyone who answers there could pose as it: refused "
                       "(run the agent with a secret and give the job the same one: "
                       "LinkOptions::secret_file, RIG_SECRET_FILE or RIG_SECRET)");
}

// The one place a handshake's or join's failure gets its context: which agent, and what of it
// (the agent's refusal in its own words).
wire::Outcome described(const wire::Outcome& o, const std::string& what, const std::string& endpoint) {
  if (o.ok()) return o;
  if (o.err() == wire::kPeerEnded) {
    return wire::Outcome::failed(o.err(), "agent " + endpoint + " refused the " +
                                              (what == "handshake" ? std::string("job") : what) + ": " + o.why());
  }
  return wire::Outcome::failed(o.err(), what + " with agent " + endpoint + ": " + o.why());
}

// The welcome (and grant) after the proof: the greeting, checked against the challenge.
wire::Outcome welcomed(int fd, std::uint32_t offer, const wire::Challenge& c, const std::optional<engine::Secret>& secret,
                       const wire::Transcript& t, Greeting& g) {
  const wire::SecretBytes key = secret ? wire::SecretBytes(secret->bytes) : wire::SecretBytes();
  wire::FrameHeader h{};
  std::vector<std::uint64_t> body;
  RIG_RETURN_IF_FAILED(recv_frame(fd, wire::MsgType::kWelcome, h, body));
  wire::WelcomeView welcome;
  RIG_RETURN_IF_FAILED(wire::decode({reinterpret_cast<const std::byte*>(body.data()), h.length}, welcome));
  if (welcome.fixed.auth != c.auth ||
      (secret && !wire::same_mac(wire::agent_proof(key, t, welcome.fixed.features, welcome.accounts),
                                 wire::to_array(welcome.fixed.mac)))) {
    return refused_agent("authentication failed (the agent's proof does not match this job's secret)");
  }
  if ((welcome.fixed.features & ~offer) != 0) return wire::violation("it accepted features never offered");
  g.accounts.assign(welcome.accounts.begin(), welcome.accounts.end());
  g.features = welcome.fixed.features;
  g.key = wire::job_key(key, t);
  if ((g.features & wire::kFeatureStripes) == 0) return {};
  g.grant.emplace();
  return recv_message(fd, wire::MsgType::kStripeGrant, *g.grant);
}

// greet() before its failure is described.
wire::Outcome greet_agent(int fd, std::uint32_t offer, const std::optional<engine::Secret>& secret,
                          const engine::Address& reached, const std::string& pinned, Greeting& g) {
  wire::Transcript t;
  t.offered = offer;
  t.client = wire::fresh_nonce();
  wire::Hello hello{wire::kMagic, wire::kVersion, 0, offer, 0};
  std::copy(t.client.begin(), t.client.end(), hello.nonce);
  RIG_RETURN_IF_FAILED(send_message(fd, hello));
  wire::Challenge c{};
  RIG_RETURN_IF_FAILED(recv_message(fd, wire::MsgType::kChallenge, c));
  t.agent = wire::to_array(c.nonce);
  t.name = wire::to_array(c.name);
  g.agent_name = std::string(wire::fixed_string(c.name));
  if (!pinned.empty() && g.agent_name != pinned) {
    return refused_agent("the agent is named '" + g.agent_name + "', not '" + pinned +
                         "' as the job pinned (LinkOptions::agent_name): refused");
  }
  RIG_RETURN_IF_FAILED(refuse_open_agent_off_loopback(c, secret.has_value(), reached));
  const wire::SecretBytes key = secret ? wire::SecretBytes(secret->bytes) : wire::SecretBytes();
  RIG_RETURN_IF_FAILED(answer_challenge(fd, c, secret.has_value(), secret ? wire::client_proof(key, t) : wire::Mac{}));
  return welcomed(fd, offer, c, secret, t, g);
}

// join() before its failure is described.
wire::Outcome join_stripe(int fd, const wire::Join& j, const wire::JobKey& key) {
  RIG_RETURN_IF_FAILED(send_message(fd, j));
  wire::Challenge c{};
  RIG_RETURN_IF_FAILED(recv_message(fd, wire::MsgType::kChallenge, c));
  wire::Proof p{};
  const wire::Mac mac = wire::join_proof(key, j, wire::to_array(c.nonce));
  std::copy(mac.begin(), mac.end(), p.mac);
  RIG_RETURN_IF_FAILED(send_message(fd, p));
  wire::FrameHeader h{};
  std::vector<std::uint64_t> echo;
  RIG_RETURN_IF_FAILED(recv_frame(fd, wire::MsgType::kJoin, h, echo));
  if (h.length != sizeof j || std::memcmp(echo.data(), &j, sizeof j) != 0) {
    return wire::violation("the join was not echoed");
  }
  return {};
}

}  // namespace

wire::Outcome greet(int fd, std::uint32_t offer, const std::optional<engine::Secret>& secret,
                    const std::string& endpoint, const engine::Address& reached, Greeting& g,
                    const std::string& pinned) {
  return described(greet_agent(fd, offer, secret, reached, pinned, g), "handshake", endpoint);
}

wire::Outcome join(int fd, const wire::Join& j, const wire::JobKey& key, const std::string& what,
                   const std::string& endpoint) {
  return described(join_stripe(fd, j, key), what, endpoint);
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
