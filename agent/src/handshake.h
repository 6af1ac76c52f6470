// The start of a connection to the agent: its first frame, read within kHelloTimeoutMs, is a
// job's hello (answered with the welcome: the accounts and the features both sides have, and a
// stripe grant when the client asked to stripe) or a data connection's join (attached to its
// job through the StripeRegistry).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config.h"
#include "job_stripes.h"
#include "rig/engine/connection.h"
#include "rig/wire/messages.h"

namespace rig::agent {

inline constexpr int kHelloTimeoutMs = 10000;

struct FirstFrame {
  bool join = false;  // a data connection's kJoin, else a job's kHello
  wire::Hello hello{};
  wire::Join stripe{};
};

// Reads and checks the first frame of the connection `fd`, header and body, within
// kHelloTimeoutMs in all: a peer that connects and stalls holds no thread of the agent's
// longer. `joining` is set as soon as the header says kJoin (whatever becomes of it).
bool read_first_frame(int fd, FirstFrame& out, bool& joining, std::string& why);

// Attaches the data connection `fd` (taken) to its job; if the job refuses it, tells the peer
// why (a kFailure) and returns false with why.
bool join_stripe(int fd, const wire::Join& join, engine::Backend backend, std::string& why);

// Sends the welcome for `hello` with `accounts`, and the stripe grant (opened in `stripes`)
// when both sides stripe.
bool send_welcome(engine::Connection& connection, const wire::Hello& hello,
                  const std::vector<wire::Account>& accounts, const AgentConfig& config,
                  JobStripes& stripes, std::string& why);

// Tells the peer of `fd` (taken), which has no job, why it is refused: a kFailure, best effort.
void refuse(int fd, const std::string& why);

}  // namespace rig::agent
