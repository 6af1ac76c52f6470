// The client's side of the handshake (wire/PROTOCOL.md 6.1; rig/wire/auth.h): on the blocking fd
// of a new connection, each frame within kHandshakeTimeoutMs, before any backend owns it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rig/engine/address.h"
#include "rig/engine/secret.h"
#include "rig/wire/auth.h"
#include "rig/wire/messages.h"
#include "rig/wire/outcome.h"

namespace rig::remote {

inline constexpr int kHandshakeTimeoutMs = 10000;

// What a job learns from its agent's welcome.
struct Greeting {
  std::vector<wire::Account> accounts;
  std::uint32_t features = 0;              // accepted
  std::optional<wire::StripeGrant> grant;  // when kFeatureStripes was accepted
  wire::JobKey key{};                      // proves the stripes' joins
  std::string agent_name;                  // as the challenge gave it
  ~Greeting() { wire::wipe(key.data(), key.size()); }  // every copy wipes its key
};

// Hello, challenge, proof, welcome (and grant): the job's connection `fd` to the agent at
// `endpoint`, reached at `reached`, offering `offer`, into `g`. With a secret, the agent must
// prove it holds it too; without, only an open agent on loopback (`reached`) is accepted; with
// `pinned` set, only an agent of that name. A failure's reason names the agent once: "handshake
// with agent E: ..." (-EACCES an agent that cannot prove who it is or is another, -EPROTO its
// violation, -ETIMEDOUT its silence, else the connection's errno), or "agent E refused the job:
// ..." with the agent's text (wire::kPeerEnded). The C++ API's edge throws it (LinkCore).
wire::Outcome greet(int fd, std::uint32_t offer, const std::optional<engine::Secret>& secret,
                    const std::string& endpoint, const engine::Address& reached, Greeting& g,
                    const std::string& pinned = {});

// Joins the data connection `fd` as `join` says, proving it by the job's key; `what` names it
// in the failure's reason ("stripe 2 with agent E: ...").
wire::Outcome join(int fd, const wire::Join& join, const wire::JobKey& key, const std::string& what,
                   const std::string& endpoint);

// The C++ API's edge for the engine's failures (Job::connect's exceptions): std::system_error
// with the outcome's errno, its what() the outcome's reason (which names the errno already).
[[noreturn]] void throw_system_error(const wire::Outcome& o);

// Connects to "HOST:PORT" (`reached`: the address that accepted). Throws std::invalid_argument
// for an endpoint that does not parse, std::runtime_error for a name that does not resolve,
// std::system_error for a connect that fails.
int connect_to(const std::string& endpoint, engine::Address& reached);

// The secret the options' file names, else the environment's, or none. Throws
// std::runtime_error ("secret ...: why") for one it refuses.
std::optional<engine::Secret> secret_of(const std::string& secret_file);

}  // namespace rig::remote
