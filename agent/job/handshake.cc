#include "job/handshake.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <utility>
#include <cerrno>
#include <cstring>

#include "exec/outbox.h"
#include "job/stripe_registry.h"
#include "rig/engine/iov_cursor.h"
#include "rig/engine/tcp.h"
#include "rig/wire/codec.h"

namespace rig::agent {

int HandshakeDeadline::left_ms() const {
  // Rounded up: 0 only once the deadline passed (a poll for what is left never wakes early).
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(at - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<std::int64_t>(left.count(), 0));
}

Handshake::Handshake(int fd, std::string peer, const AgentConfig& config, Gauges& gauges)
    : fd_(fd),
      peer_(std::move(peer)),
      config_(config),
      connection_(gauges.connections),
      deadline_{std::chrono::steady_clock::now() + std::chrono::milliseconds(config.handshake_ms), config.handshake_ms} {}

Handshake::~Handshake() {
  if (fd_ >= 0) ::close(fd_);
}

const char* Handshake::awaited() const {
  if (awaits_ != Awaits::kFirst) return "proof";
  if (have_ < sizeof(wire::FrameHeader)) return "first frame (hello or join)";
  return joining_ ? "join" : "hello";
}

Handshake::Step Handshake::fail(std::string why, std::string told) {
  why_ = std::move(why);
  told_ = std::move(told);
  return Step::kFailed;
}

Handshake::Step Handshake::expire() {
  const std::string why = std::string("no complete ") + awaited() + " within the handshake's " +
                          std::to_string(deadline_.bound_ms) + " ms of connecting";
  return fail(why, awaits_ == Awaits::kFirst ? why : std::string(kAuthFailed));
}

Handshake::Step Handshake::advance() {
  const wire::Outcome read = read_frame();
  if (read.err() == -EAGAIN) return Step::kMore;
  if (!read.ok()) return fail(read.why(), awaits_ == Awaits::kFirst ? read.why() : std::string(kAuthFailed));
  return on_frame();
}

wire::Outcome Handshake::check_header() {
  wire::FrameHeader h{};
  std::memcpy(&h, buf_, sizeof h);
  const auto type = static_cast<wire::MsgType>(h.type);
  if (awaits_ == Awaits::kFirst && type == wire::MsgType::kJoin) joining_ = true;
  if (const char* bad = wire::check_header(h)) {
    return wire::violation(std::string("bad ") + (awaits_ == Awaits::kFirst ? "hello" : "proof") + " frame: " + bad);
  }
  if (awaits_ == Awaits::kFirst && joining_) {
    if (h.length == sizeof(wire::Join)) return {};
    return wire::violation("join of " + std::to_string(h.length) + " bytes, not " + std::to_string(sizeof(wire::Join)));
  }
  const auto expected = awaits_ == Awaits::kFirst ? wire::MsgType::kHello : wire::MsgType::kProof;
  const std::size_t length = awaits_ == Awaits::kFirst ? sizeof(wire::Hello) : sizeof(wire::Proof);
  if (type == expected && h.length == length) return {};
  return wire::violation(std::string("expected ") + (awaits_ == Awaits::kFirst ? "hello" : "proof") + ", got " +
                         wire::type_name(h.type));
}

// Reads no further than the frame awaited: what follows it stays in the socket for the job.
wire::Outcome Handshake::read_frame() {
  for (;;) {
    wire::FrameHeader h{};
    if (have_ >= sizeof h) std::memcpy(&h, buf_, sizeof h);
    const std::size_t want = sizeof h + (have_ >= sizeof h ? h.length : 0);
    if (have_ >= sizeof h && have_ == want) return {};
    const ssize_t got = ::recv(fd_, buf_ + have_, want - have_, MSG_DONTWAIT);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return wire::Outcome::failed(-EAGAIN, "");
    if (got <= 0) {  // the peer's end between frames is a clean one, inside one a lost connection
      const int err = got < 0 ? -errno : have_ == 0 ? wire::kStreamEnded : -ECONNRESET;
      return wire::Outcome::failed(err, std::string("connection closed in its ") + awaited());
    }
    have_ += static_cast<std::size_t>(got);
    if (have_ == sizeof h) RIG_RETURN_IF_FAILED(check_header());
  }
}

Handshake::Step Handshake::on_frame() {
  const std::span<const std::byte> body(buf_ + sizeof(wire::FrameHeader), have_ - sizeof(wire::FrameHeader));
  have_ = 0;  // the next frame starts over
  switch (awaits_) {
    case Awaits::kFirst: {
      if (joining_) {
        if (const wire::Outcome o = wire::decode(body, join_); !o.ok()) return fail(o.why(), o.why());
        if (const wire::Outcome o = challenge(join_nonce_); !o.ok()) return fail(o.why(), kAuthFailed);
        awaits_ = Awaits::kJoinProof;
        return Step::kMore;
      }
      wire::Hello hello{};
      if (const wire::Outcome o = wire::decode(body, hello); !o.ok()) return fail(o.why(), o.why());
      transcript_.offered = hello.features;
      transcript_.client = wire::to_array(hello.nonce);
      if (const wire::Outcome o = challenge(transcript_.agent); !o.ok()) return fail(o.why(), kAuthFailed);
      awaits_ = Awaits::kProof;
      return Step::kMore;
    }
    case Awaits::kProof:
    case Awaits::kJoinProof: {
      wire::Proof p{};
      if (const wire::Outcome o = wire::decode(body, p); !o.ok()) return fail(o.why(), kAuthFailed);
      return awaits_ == Awaits::kProof ? on_proof(wire::to_array(p.mac)) : on_join_proof(wire::to_array(p.mac));
    }
  }
  return fail("a handshake in no known state", kAuthFailed);
}

// Sends a challenge with a fresh nonce and the agent's name, without waiting: the peer's
// socket buffer takes a frame this small at once, or the peer is not worth a wait.
wire::Outcome Handshake::challenge(wire::Nonce& nonce) {
  nonce = wire::fresh_nonce();
  wire::Challenge c{};
  std::copy(nonce.begin(), nonce.end(), c.nonce);
  c.auth = config_.authenticates() ? 1 : 0;
  wire::set_fixed_string(c.name, agent_name(config_));
  if (!joining_) transcript_.name = wire::to_array(c.name);
  const auto f = wire::encode(c);
  const iovec iov = engine::to_iov(&f, sizeof f);
  if (const int rc = engine::send_within(fd_, {&iov, 1}, 0); rc != 0) {
    return wire::Outcome::failed(rc, "connection lost sending the challenge");
  }
  return {};
}

Handshake::Step Handshake::on_proof(const wire::Mac& proof) {
  if (!config_.authenticates()) return Step::kJob;  // open: nothing to prove (loopback only)
  secrets_ = config_.secrets;  // those in use now: a reload meanwhile does not free them
  for (const engine::Secret& s : *secrets_) {
    if (wire::same_mac(wire::client_proof(s.bytes, transcript_), proof)) {
      secret_ = s.bytes;
      return Step::kJob;
    }
  }
  return fail("the client's proof matches none of the agent's secrets (a wrong secret, or none)", kAuthFailed);
}

Handshake::Step Handshake::on_join_proof(const wire::Mac& proof) {
  if (!StripeRegistry::instance().proved(join_, join_nonce_, proof)) {
    return fail(std::string(kAuthFailed) + ": the join's proof does not match the key of a job with its token",
                kAuthFailed);
  }
  std::unique_ptr<engine::Socket> socket = engine::make_socket(std::exchange(fd_, -1), config_.backend);
  const std::string refused = StripeRegistry::instance().attach(join_, socket);
  connection_.release();  // a stripe is its job's, not a connection of its own
  if (refused.empty()) return Step::kJoined;
  // Told now, on the socket that holds the connection (closed as it goes): refuse() has no more to do.
  const FailureFrame f("join refused: " + refused);
  engine::send_within(socket->fd(), f.iov(), 0);
  return fail(f.text, "");
}

Authenticated::~Authenticated() {
  if (fd >= 0) ::close(fd);
}

Authenticated::Authenticated(Authenticated&& other) noexcept
    : fd(std::exchange(other.fd, -1)),
      connection(std::move(other.connection)),
      transcript(other.transcript),
      secrets(std::move(other.secrets)),
      secret(other.secret) {}

Authenticated Handshake::take_job() {
  assert(awaits_ == Awaits::kProof && fd_ >= 0);
  Authenticated job;
  job.fd = std::exchange(fd_, -1);
  job.connection = std::move(connection_);
  job.transcript = transcript_;
  job.secrets = std::move(secrets_);
  job.secret = secret_;
  return job;
}

void Handshake::refuse(const std::string& why) {
  if (fd_ < 0) return;
  if (why.empty()) {
    ::close(std::exchange(fd_, -1));
  } else {
    agent::refuse(std::exchange(fd_, -1), why, 0);
  }
}

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

std::uint32_t accepted_features(std::uint32_t offered, const AgentConfig& config) {
  const std::uint32_t supported = wire::kFeaturePrograms | wire::kFeatureStatus |
                                  (config.max_stripes > 0 ? std::uint32_t{wire::kFeatureStripes} : 0u);
  return offered & supported;
}

wire::Outcome send_welcome(engine::Connection& connection, const wire::Transcript& t, wire::SecretBytes secret,
                           const std::vector<wire::Account>& accounts, const AgentConfig& config,
                           JobStripes& stripes) {
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
  if (const int rc = connection.send(iov); rc != 0) {
    return wire::Outcome::failed(rc, "connection lost sending the welcome");
  }
  if ((accepted & wire::kFeatureStripes) == 0) return {};
  const std::uint32_t max = std::min(config.max_stripes, wire::kMaxStripes);
  const auto g = wire::encode(wire::StripeGrant{stripes.grant(max, wire::job_key(secret, t)), max, 0});
  const iovec giov = engine::to_iov(&g, sizeof g);
  if (const int rc = connection.send({&giov, 1}); rc != 0) {
    return wire::Outcome::failed(rc, "connection lost sending the stripe grant");
  }
  return {};
}

void refuse(int fd, const std::string& why, int timeout_ms) {
  const FailureFrame f(why);
  const auto iov = f.iov();
  engine::send_within(fd, iov, timeout_ms);  // best effort: a peer that reads nothing is not waited for
  ::close(fd);
}

}  // namespace rig::agent
