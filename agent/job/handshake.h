// The start of a connection to the agent (wire/PROTOCOL.md 6.1). Its first frame, read within
// the handshake's one deadline like every later frame of it, is a job's hello or a data
// connection's join. A hello is answered with a challenge; the client's proof is checked
// against each of the agent's secrets (two during a rotation), and only then does the job get
// its welcome (the accepted features, the accounts, the agent's own proof) and, when both sides
// stripe, a grant. A join is answered with a challenge too, and attached to its job through the
// StripeRegistry once its proof by the job's key holds. A peer that fails to prove itself
// learns only "authentication failed"; the agent's log says why.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "job/job_stripes.h"
#include "process/config.h"
#include "process/handshake_room.h"
#include "rig/engine/connection.h"
#include "rig/wire/auth.h"
#include "rig/wire/messages.h"

namespace rig::agent {

inline constexpr const char* kAuthFailed = "authentication failed";

// The handshake's one deadline: every frame of it, both ways, is done within bound_ms
// (AgentConfig::handshake_ms) of the connection's accept, however a peer spreads its bytes.
struct HandshakeDeadline {
  std::chrono::steady_clock::time_point at;
  int bound_ms = 0;
  // What is left of it (0 once it passed).
  int left_ms() const;
};

struct FirstFrame {
  bool join = false;  // a data connection's kJoin, else a job's kHello
  wire::Hello hello{};
  wire::Join stripe{};
};

// The name the agent's challenges give: config.name, else the machine's host name (cut to 63
// bytes), else "rig-agent".
std::string agent_name(const AgentConfig& config);
// What is wrong with `name` as an agent's name (--name), or "": 1 to 63 bytes, each printable
// and not a space.
std::string check_agent_name(const std::string& name);

// Reads and checks the first frame of the connection `fd`, header and body, before `deadline`:
// a peer that connects and stalls holds no thread of the agent's longer. `joining` is set as
// soon as the header says kJoin (whatever becomes of it).
bool read_first_frame(int fd, const HandshakeDeadline& deadline, FirstFrame& out, bool& joining, std::string& why);

// The job's proof after its hello: sends the challenge, reads the proof and finds the secret it
// was made with (`secret` empty for an open agent), filling the transcript. False (with why,
// for the log; the caller tells the peer only kAuthFailed) if the client did not prove it.
bool authenticate(int fd, const HandshakeDeadline& deadline, const wire::Hello& hello, const AgentConfig& config,
                  wire::Transcript& t, wire::SecretBytes& secret, std::string& why);

// The features the agent accepts of those a hello `offered`: programs, the status query, and
// stripes when --max-stripes allows them.
std::uint32_t accepted_features(std::uint32_t offered, const AgentConfig& config);

// Sends the welcome for the authenticated hello with `accounts` and the agent's proof, and the
// stripe grant (opened in `stripes` with the job's key) when both sides stripe.
bool send_welcome(engine::Connection& connection, const wire::Transcript& t, wire::SecretBytes secret,
                  const std::vector<wire::Account>& accounts, const AgentConfig& config,
                  JobStripes& stripes, std::string& why);

// Proves the data connection `fd` (taken) and attaches it to its job; if it is refused, tells
// the peer (kAuthFailed, or the job's reason once proved) and returns false with why.
// Its place among the connections in their handshake (`handshaking`) is given back once the
// join is proved, before the connection is attached (no shed may touch a stripe).
bool join_stripe(int fd, const HandshakeDeadline& deadline, const wire::Join& join, const AgentConfig& config,
                 HandshakePlace& handshaking, std::string& why);

// Tells the peer of `fd` (taken), which has no job, why it is refused: a kFailure, best effort.
// Waits at most timeout_ms for the peer to take it.
void refuse(int fd, const std::string& why, int timeout_ms = 1000);

}  // namespace rig::agent
