// The MACs of the authenticated handshake (protocol v2, wire/PROTOCOL.md 6.1): a job and an agent
// prove to each other that they hold the same secret, which never crosses the wire.
//
//   client -> agent  kHello     {offered features, nonce_c}
//   agent -> client  kChallenge {nonce_a, auth}
//   client -> agent  kProof     {client_proof}
//   agent -> client  kWelcome   {accepted features, accounts, agent_proof}
//
// Both proofs are HMAC-SHA256 under the secret over the same transcript (version, offered
// features, both nonces, the agent's name), each with its own role label, so a proof of one side is never valid as
// the other's (a reflected challenge gets nothing), and a recorded proof is worthless against a
// fresh nonce (no replay). The agent's proof also covers the accepted features and the accounts
// (no downgrade, no forged account). The job's key, HKDF-SHA256 of the secret with both nonces,
// proves each stripe's join against a fresh agent nonce. The name binds the job to the agent
// that challenged it: a relay that sends the job to another agent holding the same secret
// under the name of the one it meant fails both proofs, and a job that pins the name
// (LinkOptions::agent_name) refuses another agent's challenge outright. An open agent (no secret, loopback
// only) uses the empty secret: its proofs prove nothing, and a client that holds a secret refuses it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "rig/wire/messages.h"

namespace rig::wire {

inline constexpr std::size_t kMinSecretBytes = 32;

using Nonce = std::array<std::uint8_t, kNonceBytes>;
using Mac = std::array<std::uint8_t, kMacBytes>;
using JobKey = std::array<std::uint8_t, 32>;
using SecretBytes = std::span<const std::uint8_t>;

// 32 bytes from the operating system's CSPRNG. Where it has none, or OpenSSL cannot compute a
// MAC or the job key, the process stops saying so (auth.cc: a broken installation, no outcome).
Nonce fresh_nonce();

struct Transcript {
  std::uint32_t offered = 0;  // the features the hello offered
  Nonce client{};
  Nonce agent{};
  std::array<char, kAgentNameBytes> name{};  // the agent's, as its challenge gave it
};

Mac client_proof(SecretBytes secret, const Transcript& t);
Mac agent_proof(SecretBytes secret, const Transcript& t, std::uint32_t accepted,
                std::span<const Account> accounts);
JobKey job_key(SecretBytes secret, const Transcript& t);
// The proof of a stripe's join (its fields, the agent's nonce for it) by the job's key.
Mac join_proof(const JobKey& key, const Join& join, const Nonce& nonce);

// Equal, in time that does not depend on where they differ.
bool same_mac(const Mac& a, const Mac& b);

// Overwrites n bytes at p with zeros in a way the compiler keeps (OPENSSL_cleanse): for secret
// bytes and keys about to be dropped.
void wipe(void* p, std::size_t n) noexcept;

template <std::size_t N>
std::array<char, N> to_array(const char (&field)[N]) {
  std::array<char, N> out;
  for (std::size_t i = 0; i < N; ++i) out[i] = field[i];
  return out;
}

template <std::size_t N>
std::array<std::uint8_t, N> to_array(const std::uint8_t (&field)[N]) {
  std::array<std::uint8_t, N> out;
  for (std::size_t i = 0; i < N; ++i) out[i] = field[i];
  return out;
}

}  // namespace rig::wire
