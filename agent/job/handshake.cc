#include "job/handshake.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "exec/outbox.h"
#include "job/stripe_registry.h"
#include "rig/engine/iov_cursor.h"
#include "rig/engine/tcp.h"
#include "rig/wire/codec.h"

namespace rig::agent {
namespace {

bool recv_within(int fd, const HandshakeDeadline& d, void* buf, std::size_t n, const char* what, std::string& why) {
  const int rc = engine::recv_within(fd, buf, n, d.left_ms());
  if (rc == -ETIME) {
    why = std::string("no complete ") + what + " within the handshake's " + std::to_string(d.bound_ms) +
          " ms of connecting";
  } else if (rc != 0) {
    why = std::string("connection closed in its ") + what;
  }
  return rc == 0;
}

// Reads a whole frame of type `type` whose body is exactly an M, within the handshake's time.
template <class M>
bool recv_message(int fd, const HandshakeDeadline& d, wire::MsgType type, M& out, const char* what, std::string& why) {
  wire::FrameHeader h{};
  if (!recv_within(fd, d, &h, sizeof h, what, why)) return false;
  if (const char* bad = wire::check_header(h)) {
    why = std::string("bad ") + what + " frame: " + bad;
    return false;
  }
  if (h.type != static_cast<std::uint16_t>(type) || h.length != sizeof(M)) {
    why = std::string("expected ") + what + ", got " + wire::type_name(h.type);
    return false;
  }
  alignas(8) std::byte body[sizeof(M)];
  return recv_within(fd, d, body, sizeof body, what, why) && wire::decode(body, out, why);
}

template <class M>
bool send_message(int fd, const HandshakeDeadline& d, const M& msg, const char* what, std::string& why) {
  const auto f = wire::encode(msg);
  const iovec iov = engine::to_iov(&f, sizeof f);
  if (engine::send_within(fd, {&iov, 1}, d.left_ms()) == 0) return true;
  why = std::string("connection lost sending the ") + what;
  return false;
}

// Sends a challenge with a fresh nonce and the agent's name, and reads the proof that answers it.
bool challenge(int fd, const HandshakeDeadline& d, const AgentConfig& config, wire::Nonce& nonce, wire::Mac& proof,
               std::string& why,
               std::array<char, wire::kAgentNameBytes>* name = nullptr) {
  nonce = wire::fresh_nonce();
  wire::Challenge c{};
  std::copy(nonce.begin(), nonce.end(), c.nonce);
  c.auth = config.authenticates() ? 1 : 0;
  wire::set_fixed_string(c.name, agent_name(config));
  if (name != nullptr) *name = wire::to_array(c.name);
  wire::Proof p{};
  if (!send_message(fd, d, c, "challenge", why) || !recv_message(fd, d, wire::MsgType::kProof, p, "proof", why)) {
    return false;
  }
  proof = wire::to_array(p.mac);
  return true;
}

}  // namespace

std::string agent_name(const AgentConfig& config) {
  if (!config.name.empty()) return config.name;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == 0) return "rig-agent";
  return std::string(host).substr(0, wire::kAgentNameBytes - 1);
}

std::string check_agent_name(const std::string& name) {
  if (name.empty() || name.size() >= wire::kAgentNameBytes) {
    return "an agent's name has 1 to " + std::to_string(wire::kAgentNameBytes - 1) + " bytes";
  }
  for (const char c : name) {
    if (c <= ' ' || c > '~') return "an agent's name holds printable bytes only, no space";
  }
  return "";
}

int HandshakeDeadline::left_ms() const {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<std::int64_t>(left.count(), 0));
}

bool read_first_frame(int fd, const HandshakeDeadline& d, FirstFrame& out, bool& joining, std::string& why) {
  wire::FrameHeader h{};
  if (!recv_within(fd, d, &h, sizeof h, "first frame (hello or join)", why)) return false;
  if (const char* bad = wire::check_header(h)) {
    why = std::string("bad hello frame: ") + bad;
    return false;
  }
  if (h.type == static_cast<std::uint16_t>(wire::MsgType::kJoin)) {
    joining = out.join = true;  // a data connection, whatever becomes of it: not a job
    alignas(8) std::byte body[sizeof(wire::Join)];
    if (h.length != sizeof body) {
      why = "join of " + std::to_string(h.length) + " bytes, not " + std::to_string(sizeof body);
      return false;
    }
    return recv_within(fd, d, body, sizeof body, "join", why) && wire::decode(body, out.stripe, why);
  }
  if (h.type != static_cast<std::uint16_t>(wire::MsgType::kHello) || h.length != sizeof(wire::Hello)) {
    why = std::string("expected hello, got ") + wire::type_name(h.type);
    return false;
  }
  alignas(8) std::byte body[sizeof(wire::Hello)];
  return recv_within(fd, d, body, sizeof body, "hello", why) && wire::decode(body, out.hello, why);
}

bool authenticate(int fd, const HandshakeDeadline& d, const wire::Hello& hello, const AgentConfig& config,
                  wire::Transcript& t, wire::SecretBytes& secret, std::string& why) {
  t.offered = hello.features;
  t.client = wire::to_array(hello.nonce);
  wire::Mac proof{};
  if (!challenge(fd, d, config, t.agent, proof, why, &t.name)) return false;
  if (!config.authenticates()) {
    secret = {};
    return true;  // open: nothing to prove (loopback only)
  }
  for (const engine::Secret& s : *config.secrets) {
    if (wire::same_mac(wire::client_proof(s.bytes, t), proof)) {
      secret = s.bytes;
      return true;
    }
  }
  why = "the client's proof matches none of the agent's secrets (a wrong secret, or none)";
  return false;
}

std::uint32_t accepted_features(std::uint32_t offered, const AgentConfig& config) {
  const std::uint32_t supported = wire::kFeaturePrograms | wire::kFeatureStatus |
                                  (config.max_stripes > 0 ? std::uint32_t{wire::kFeatureStripes} : 0u);
  return offered & supported;
}

bool send_welcome(engine::Connection& connection, const wire::Transcript& t, wire::SecretBytes secret,
                  const std::vector<wire::Account>& accounts, const AgentConfig& config,
                  JobStripes& stripes, std::string& why) {
  const std::uint32_t accepted = accepted_features(t.offered, config);
  wire::Welcome w{wire::kMagic, wire::kVersion, static_cast<std::uint16_t>(config.authenticates() ? 1 : 0),
                  accepted, static_cast<std::uint32_t>(accounts.size())};
  if (config.authenticates()) {
    const wire::Mac mac = wire::agent_proof(secret, t, accepted, accounts);
    std::copy(mac.begin(), mac.end(), w.mac);
  }
  const auto f = wire::encode(w);
  const iovec iov[2] = {engine::to_iov(&f, sizeof f),
                        engine::to_iov(accounts.data(), accounts.size() * sizeof(wire::Account))};
  if (connection.send(iov) != 0) {
    why = "connection lost sending the welcome";
    return false;
  }
  if ((accepted & wire::kFeatureStripes) == 0) return true;
  const std::uint32_t max = std::min(config.max_stripes, wire::kMaxStripes);
  const auto g = wire::encode(wire::StripeGrant{stripes.grant(max, wire::job_key(secret, t)), max, 0});
  const iovec giov = engine::to_iov(&g, sizeof g);
  if (connection.send({&giov, 1}) != 0) {
    why = "connection lost sending the stripe grant";
    return false;
  }
  return true;
}

bool join_stripe(int fd, const HandshakeDeadline& d, const wire::Join& join, const AgentConfig& config,
                 HandshakePlace& handshaking, std::string& why) {
  wire::Nonce nonce{};
  wire::Mac proof{};
  if (!challenge(fd, d, config, nonce, proof, why)) {
    refuse(fd, kAuthFailed);
    return false;
  }
  if (!StripeRegistry::instance().proved(join, nonce, proof)) {
    why = std::string(kAuthFailed) + ": the join's proof does not match the key of a job with its token";
    refuse(fd, kAuthFailed);
    return false;
  }
  handshaking.release();
  std::unique_ptr<engine::Socket> socket = engine::make_socket(fd, config.backend);
  const std::string refused = StripeRegistry::instance().attach(join, socket);
  if (refused.empty()) return true;
  why = "join refused: " + refused;
  const FailureFrame f(why);
  const auto iov = f.iov();
  socket->send_all(iov);
  return false;
}

void refuse(int fd, const std::string& why, int timeout_ms) {
  const FailureFrame f(why);
  const auto iov = f.iov();
  engine::send_within(fd, iov, timeout_ms);  // best effort: a peer that reads nothing is not waited for
  ::close(fd);
}

}  // namespace rig::agent
