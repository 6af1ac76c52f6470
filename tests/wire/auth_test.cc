// The handshake's MACs (rig/wire/auth.h): each proof binds its role, both nonces, the protocol
// version and the features, so no proof is valid for another role, another handshake or other
// features; the job's key and the joins' proofs likewise.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string_view>
#include <vector>

#include "rig/wire/auth.h"
#include "rig/wire/codec.h"

namespace rig::wire {
namespace {

std::vector<std::uint8_t> secret(std::uint8_t fill) { return std::vector<std::uint8_t>(32, fill); }

Transcript a_transcript() {
  Transcript t;
  t.offered = kFeaturePrograms | kFeatureStripes;
  t.client = fresh_nonce();
  t.agent = fresh_nonce();
  return t;
}

std::vector<Account> accounts() {
  std::vector<Account> v(2);
  v[0].id = 0;
  v[1].id = 1;
  v[1].budget = 1 << 20;
  return v;
}

TEST(Auth, FreshNoncesDiffer) {
  std::set<Nonce> seen;
  for (int i = 0; i < 64; ++i) EXPECT_TRUE(seen.insert(fresh_nonce()).second);
}

TEST(Auth, AProofIsTheSameForTheSameSecretAndTranscriptAndDiffersForAnotherSecret) {
  const Transcript t = a_transcript();
  EXPECT_TRUE(same_mac(client_proof(secret(1), t), client_proof(secret(1), t)));
  EXPECT_FALSE(same_mac(client_proof(secret(1), t), client_proof(secret(2), t)));
}

TEST(Auth, TheAgentsProofIsNeverTheClientsForTheSameTranscript) {
  // A reflected challenge: the client's proof is worthless as the agent's, and back.
  const Transcript t = a_transcript();
  EXPECT_FALSE(same_mac(client_proof(secret(1), t), agent_proof(secret(1), t, 0, {})));
}

TEST(Auth, EachNonceAndTheOfferedFeaturesAreBound) {
  const Transcript t = a_transcript();
  const Mac proof = client_proof(secret(1), t);
  Transcript other = t;
  other.client[5] ^= 1;  // a recorded proof against another handshake of the client
  EXPECT_FALSE(same_mac(proof, client_proof(secret(1), other)));
  other = t;
  other.agent[31] ^= 0x80;  // a replayed proof against a fresh agent nonce
  EXPECT_FALSE(same_mac(proof, client_proof(secret(1), other)));
  other = t;
  other.offered = kFeaturePrograms;  // a hello stripped of a feature (downgrade)
  EXPECT_FALSE(same_mac(proof, client_proof(secret(1), other)));
}

TEST(Auth, TheAgentsNameIsBoundInBothProofsAndTheJobKey) {
  // A relay that sends the job to another agent under the name of the one it meant: the proofs
  // made over either name are worthless for the other.
  Transcript t = a_transcript();
  const std::string_view name = "gpu-a";
  std::copy(name.begin(), name.end(), t.name.begin());
  Transcript other = t;
  other.name[kAgentNameBytes - 2] = 'x';  // the field's last byte but its NUL
  EXPECT_FALSE(same_mac(client_proof(secret(1), t), client_proof(secret(1), other)));
  EXPECT_FALSE(same_mac(agent_proof(secret(1), t, 0, {}), agent_proof(secret(1), other, 0, {})));
  EXPECT_NE(job_key(secret(1), t), job_key(secret(1), other));
}

TEST(Auth, TheAgentsProofCoversTheAcceptedFeaturesAndTheAccounts) {
  const Transcript t = a_transcript();
  const auto a = accounts();
  const Mac proof = agent_proof(secret(1), t, kFeatureStripes, a);
  EXPECT_TRUE(same_mac(proof, agent_proof(secret(1), t, kFeatureStripes, a)));
  EXPECT_FALSE(same_mac(proof, agent_proof(secret(1), t, 0, a)));
  auto forged = a;
  forged[1].budget += 1;
  EXPECT_FALSE(same_mac(proof, agent_proof(secret(1), t, kFeatureStripes, forged)));
  forged.pop_back();
  EXPECT_FALSE(same_mac(proof, agent_proof(secret(1), t, kFeatureStripes, forged)));
}

TEST(Auth, TheJobKeyDependsOnTheSecretAndBothNoncesAndIsNoProof) {
  const Transcript t = a_transcript();
  const JobKey key = job_key(secret(1), t);
  EXPECT_EQ(key, job_key(secret(1), t));
  EXPECT_NE(key, job_key(secret(2), t));
  Transcript other = t;
  other.agent[0] ^= 1;
  EXPECT_NE(key, job_key(secret(1), other));
  // An open agent's key (the empty secret) is no secret's.
  EXPECT_NE(job_key({}, t), key);
  EXPECT_FALSE(same_mac(Mac(key), client_proof(secret(1), t)));
}

TEST(Auth, AJoinsProofBindsEveryFieldOfTheJoinAndTheAgentsNonce) {
  const JobKey key = job_key(secret(1), a_transcript());
  const Join join{kMagic, kVersion, 1, 4, 0, 1024, 77};
  const Nonce nonce = fresh_nonce();
  const Mac proof = join_proof(key, join, nonce);
  EXPECT_TRUE(same_mac(proof, join_proof(key, join, nonce)));
  EXPECT_FALSE(same_mac(proof, join_proof(key, join, fresh_nonce())));
  for (int field = 0; field < 4; ++field) {
    Join other = join;
    if (field == 0) other.stripe = 2;
    if (field == 1) other.count = 3;
    if (field == 2) other.min_kib = 2048;
    if (field == 3) other.token = 78;
    EXPECT_FALSE(same_mac(proof, join_proof(key, other, nonce))) << "field " << field;
  }
  JobKey another = key;
  another[7] ^= 1;
  EXPECT_FALSE(same_mac(proof, join_proof(another, join, nonce)));
}

TEST(Auth, SameMacComparesEveryByte) {
  Mac a{};
  for (std::size_t i = 0; i < a.size(); ++i) {
    Mac b = a;
    b[i] = 1;
    EXPECT_FALSE(same_mac(a, b)) << i;
  }
  EXPECT_TRUE(same_mac(a, Mac{}));
}

}  // namespace
}  // namespace rig::wire
