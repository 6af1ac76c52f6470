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
// `endpoint`, reached at `reached`, offering `offer`. With a secret, the agent must prove it
// holds it too; without, only an open agent on loopback (`reached`) is accepted; with `pinned`
// set, only an agent of that name. Throws
// std::runtime_error (or std::system_error) naming the agent and the cause; an agent's refusal
// is thrown with its text.
Greeting greet(int fd, std::uint32_t offer, const std::optional<engine::Secret>& secret,
               const std::string& endpoint, const engine::Address& reached, const std::string& pinned = {});

// Joins the data connection `fd` as `join` says, proving it by the job's key; `what` names it
// in errors ("stripe 2").
void join(int fd, const wire::Join& join, const wire::JobKey& key, const std::string& what,
          const std::string& endpoint);

}  // namespace rig::remote
