// The start of a connection to the agent (wire/PROTOCOL.md 6.1). Its first frame is a job's
// hello or a data connection's join. A hello is answered with a challenge; the client's proof is
// checked against each of the agent's secrets (two during a rotation), and only then does the
// job get a thread of its own (job/session.h), which sends its welcome (the accepted features,
// the accounts, the agent's own proof) and, when both sides stripe, a grant. A join is answered
// with a challenge too, and attached to its job through the StripeRegistry once its proof by
// the job's key holds. A peer that fails to prove itself learns only "authentication failed";
// the agent's log says why.
//
// A connection in its handshake holds no thread: the accept thread drives every one of them
// (process/handshake_room.h), and a Handshake only reads what its peer already sent.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "job/job_stripes.h"
#include "process/config.h"
#include "process/gauges.h"
#include "rig/engine/connection.h"
#include "rig/wire/auth.h"
#include "rig/wire/messages.h"
#include "rig/wire/outcome.h"

namespace rig::agent {

inline constexpr const char* kAuthFailed = "authentication failed";

// The handshake's one deadline: every frame of it, both ways, is done within bound_ms
// (AgentConfig::handshake_ms) of the connection's accept, however a peer spreads its bytes.
struct HandshakeDeadline {
  std::chrono::steady_clock::time_point at;
  int bound_ms = 0;
  // What is left of it, rounded up to a millisecond (0 once it passed).
  int left_ms() const;
};

// A job whose client proved itself: what its session needs to welcome it. Closes its fd unless
// it was taken (release_fd).
struct Authenticated {
  Authenticated() = default;
  ~Authenticated();
  Authenticated(Authenticated&& other) noexcept;
  Authenticated& operator=(Authenticated&&) = delete;
  int release_fd() { return std::exchange(fd, -1); }
  int fd = -1;           // the job's connection
  Held connection;       // its place among the agent's connections (--max-connections)
  wire::Transcript transcript{};
  // The secret the client proved (empty for an open agent), in `secrets`, which it keeps alive.
  std::shared_ptr<const std::vector<engine::Secret>> secrets;
  wire::SecretBytes secret;
};

// One connection's handshake, driven without a thread: advance() reads what the peer sent so
// far, never waiting, and answers each frame once it is whole.
class Handshake {
 public:
  enum class Step {
    kMore,    // waiting for the peer's next bytes
    kFailed,  // why() for the log, told() for the peer
    kJob,     // a job proved itself: take_job()
    kJoined,  // a data connection joined its job, which holds it now
  };
  // `fd` and the count of it in gauges.connections (taken by the caller) are the Handshake's
  // until take_job(); `config` outlives it (its secrets are read when the proof comes).
  Handshake(int fd, std::string peer, const AgentConfig& config, Gauges& gauges);
  ~Handshake();  // closes the connection unless it was taken
  Handshake(const Handshake&) = delete;
  Handshake& operator=(const Handshake&) = delete;

  // When the connection is readable (or hung up): reads and answers.
  Step advance();
  // The deadline passed: kFailed, why() naming the frame it waited for.
  Step expire();
  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }
  const HandshakeDeadline& deadline() const { return deadline_; }
  // The first frame was a join: a stripe, whatever became of it, not a job.
  bool joining() const { return joining_; }
  // It failed on a job's proof (an authentication failure, not a malformed start).
  bool proving() const { return awaits_ == Awaits::kProof; }
  const std::string& why() const { return why_; }
  const std::string& told() const { return told_; }  // "" when it was told already
  // After kJob.
  Authenticated take_job();
  // Ends it as failed: `why` for the log, `told` for the peer ("" when it was told already).
  Step fail(std::string why, std::string told);
  // Tells the peer `why` without waiting (nothing when `why` is empty) and closes the
  // connection, unless it was taken. After kFailed, refuse(told()).
  void refuse(const std::string& why);

 private:
  enum class Awaits { kFirst, kProof, kJoinProof };
  // Reads what the peer sent of the awaited frame: ok once it is whole in buf_, -EAGAIN (no
  // reason) while it is not yet; else the connection closed (wire::kStreamEnded between frames,
  // -ECONNRESET inside one, the recv's -errno) or the header is not the one awaited (-EPROTO).
  wire::Outcome read_frame();
  wire::Outcome check_header();  // of the frame whose header is in buf_: -EPROTO unless awaited
  Step on_frame();
  Step on_proof(const wire::Mac& proof);
  Step on_join_proof(const wire::Mac& proof);
  wire::Outcome challenge(wire::Nonce& nonce);  // a failure is the connection lost (the send's -errno)
  const char* awaited() const;

  static constexpr std::size_t kMaxBody = std::max({sizeof(wire::Hello), sizeof(wire::Join), sizeof(wire::Proof)});
  int fd_;
  std::string peer_;
  const AgentConfig& config_;
  Held connection_;
  const HandshakeDeadline deadline_;
  Awaits awaits_ = Awaits::kFirst;
  bool joining_ = false;
  alignas(8) std::byte buf_[sizeof(wire::FrameHeader) + kMaxBody];
  std::size_t have_ = 0;
  wire::Join join_{};
  wire::Nonce join_nonce_{};
  wire::Transcript transcript_{};
  std::shared_ptr<const std::vector<engine::Secret>> secrets_;
  wire::SecretBytes secret_;
  std::string why_;
  std::string told_;
};

// The name the agent's challenges give: config.name, else the machine's host name (cut to 63
// bytes), else "rig-agent".
std::string agent_name(const AgentConfig& config);
// What is wrong with `name` as an agent's name (--name), or "": 1 to 63 bytes, each printable
// and not a space.
std::string check_agent_name(const std::string& name);

// The features the agent accepts of those a hello `offered`: programs, the status query, and
// stripes when --max-stripes allows them.
std::uint32_t accepted_features(std::uint32_t offered, const AgentConfig& config);

// Sends the welcome for the authenticated hello with `accounts` and the agent's proof, and the
// stripe grant (opened in `stripes` with the job's key) when both sides stripe. A failure is the
// connection lost: the send's -errno, the reason naming what was being sent.
wire::Outcome send_welcome(engine::Connection& connection, const wire::Transcript& t, wire::SecretBytes secret,
                           const std::vector<wire::Account>& accounts, const AgentConfig& config,
                           JobStripes& stripes);

// Tells the peer of `fd` (taken), which has no job, why it is refused: a kFailure, best effort.
// Waits at most timeout_ms for the peer to take it.
void refuse(int fd, const std::string& why, int timeout_ms = 1000);

}  // namespace rig::agent
