// Closed to strangers (wire/PROTOCOL.md 6.1): a job and a real rig-agent prove to each other that
// they share a secret; whoever cannot learns only "authentication failed", and the agent goes
// on serving the jobs that can.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "agent_process.h"
#include "command.h"
#include "connect_error.h"
#include "raw_peer.h"
#include "rig/engine/secret.h"
#include "rig/engine/tcp.h"
#include "rig/remote/job.h"
#include "rig/wire/auth.h"

namespace rig::test {
namespace {

// Reads the challenge that answers a hello or a join.
wire::Challenge read_challenge(int fd) {
  RawFrame f;
  wire::Challenge c{};
  std::string why;
  EXPECT_TRUE(read_frame(fd, f));
  EXPECT_EQ(f.header.type, static_cast<std::uint16_t>(wire::MsgType::kChallenge));
  EXPECT_TRUE(wire::passed(wire::decode(f.bytes(), c), why)) << why;
  return c;
}

wire::Proof proof_of(const wire::Mac& mac) {
  wire::Proof p{};
  std::copy(mac.begin(), mac.end(), p.mac);
  return p;
}

// A copy of `secret`'s bytes in a new private file.
std::string copy_secret(const engine::Secret& secret, const engine::PrivateSecretFile& beside) {
  const std::string path = beside.path() + ".copy";
  std::ofstream(path) << std::string(secret.bytes.begin(), secret.bytes.end());
  ::chmod(path.c_str(), 0600);
  return path;
}

TEST(Authentication, AJobWithAnotherSecretIsRefusedWithOnlyAuthenticationFailedAndTheAgentGoesOn) {
  AgentProcess agent;
  const engine::PrivateSecretFile other = *engine::PrivateSecretFile::make();
  const std::string why = connect_error(agent.endpoint(), other.path());
  // The agent's refusal in its words, the agent named once.
  EXPECT_EQ(why, "agent " + agent.endpoint() + " refused the job: authentication failed");
  EXPECT_TRUE(agent.alive());
  EXPECT_EQ(connect_error(agent.endpoint()), "");  // the agent's own secret still opens jobs
}

TEST(Authentication, AClientWithoutTheSecretGetsAChallengeAndThenOnlyAuthenticationFailed) {
  AgentProcess agent;
  RawClient c(agent.endpoint());
  wire::Hello h{wire::kMagic, wire::kVersion, 0, 0, 0};
  send_msg(c.fd(), wire::MsgType::kHello, h);
  const wire::Challenge challenge = read_challenge(c.fd());
  EXPECT_EQ(challenge.auth, 1u) << "the agent has a secret: it must ask for a proof";
  send_msg(c.fd(), wire::MsgType::kProof, wire::Proof{});
  EXPECT_EQ(c.failure_text(), "authentication failed");
}

TEST(Authentication, AMalformedProofFrameGetsOnlyAuthenticationFailedNotWhatWasWrongWithIt) {
  AgentProcess agent;
  RawClient c(agent.endpoint());
  send_msg(c.fd(), wire::MsgType::kHello, wire::Hello{wire::kMagic, wire::kVersion, 0, 0, 0});
  read_challenge(c.fd());
  // A proof's header whose length is not a proof's: the frame fails its header check.
  const wire::FrameHeader bad{sizeof(wire::Proof) + 8, static_cast<std::uint16_t>(wire::MsgType::kProof), 0};
  ASSERT_TRUE(write_all(c.fd(), &bad, sizeof bad));
  EXPECT_EQ(c.failure_text(), "authentication failed");
  EXPECT_EQ(connect_error(agent.endpoint()), "");  // the agent serves on
}

TEST(Authentication, ARecordedProofIsWorthlessAgainstTheAgentsNextChallenge) {
  AgentProcess agent;
  const engine::Secret secret = test_secret();
  wire::Hello h{wire::kMagic, wire::kVersion, 0, 0, 0};
  const wire::Nonce client = wire::fresh_nonce();
  std::copy(client.begin(), client.end(), h.nonce);
  wire::Proof recorded{};
  {
    RawClient first(agent.endpoint());
    send_msg(first.fd(), wire::MsgType::kHello, h);
    const wire::Challenge c = read_challenge(first.fd());
    recorded = proof_of(wire::client_proof(secret.bytes, {0, client, wire::to_array(c.nonce), wire::to_array(c.name)}));
    send_msg(first.fd(), wire::MsgType::kProof, recorded);
    RawFrame welcome;
    ASSERT_TRUE(read_frame(first.fd(), welcome));
    ASSERT_EQ(welcome.header.type, static_cast<std::uint16_t>(wire::MsgType::kWelcome));
  }
  RawClient replay(agent.endpoint());
  send_msg(replay.fd(), wire::MsgType::kHello, h);  // the same hello, nonce and all
  read_challenge(replay.fd());
  send_msg(replay.fd(), wire::MsgType::kProof, recorded);
  EXPECT_EQ(replay.failure_text(), "authentication failed");
}

TEST(Authentication, AJoinProvedByTheJobsKeyJoinsAndAJoinProvedByAnyOtherKeyIsRefused) {
  AgentProcess agent;
  RawClient job(agent.endpoint());
  job.hello(wire::kFeatureStripes);
  const wire::Join join{wire::kMagic, wire::kVersion, 0, 2, 0, 1024, job.grant().token};
  {
    RawClient stranger(agent.endpoint());  // knows the token (it crossed in the clear), not the key
    send_msg(stranger.fd(), wire::MsgType::kJoin, join);
    const wire::Challenge c = read_challenge(stranger.fd());
    wire::JobKey guess = job.key();
    guess[0] ^= 1;
    send_msg(stranger.fd(), wire::MsgType::kProof, proof_of(wire::join_proof(guess, join, wire::to_array(c.nonce))));
    EXPECT_EQ(stranger.failure_text(), "authentication failed");
  }
  RawClient stripe(agent.endpoint());
  send_msg(stripe.fd(), wire::MsgType::kJoin, join);
  const wire::Challenge c = read_challenge(stripe.fd());
  send_msg(stripe.fd(), wire::MsgType::kProof, proof_of(wire::join_proof(job.key(), join, wire::to_array(c.nonce))));
  RawFrame echo;
  ASSERT_TRUE(read_frame(stripe.fd(), echo));
  EXPECT_EQ(echo.header.type, static_cast<std::uint16_t>(wire::MsgType::kJoin));
}

std::string host_name() {
  char host[256] = {};
  EXPECT_EQ(::gethostname(host, sizeof host - 1), 0);
  return std::string(host).substr(0, wire::kAgentNameBytes - 1);
}

TEST(Authentication, AJobThatPinsTheAgentsNameIsServedByItAndRefusedByAnAgentOfAnotherName) {
  const std::string longest(wire::kAgentNameBytes - 1, 'g');  // the longest name there is
  AgentProcess agent({"--name", longest});
  auto job = remote::Job::create();
  remote::LinkOptions pinned;
  pinned.agent_name = longest;
  EXPECT_EQ(job->connect(agent.endpoint(), pinned).agent_name(), longest);
  pinned.agent_name = longest.substr(1);
  const std::string why = connect_error(agent.endpoint(), pinned);
  // The job's own refusal, the agent named once.
  EXPECT_EQ(why, "handshake with agent " + agent.endpoint() + ": the agent is named '" + longest + "', not '" +
                     pinned.agent_name + "' as the job pinned (LinkOptions::agent_name): refused");
}

TEST(Authentication, AnAgentWithoutANameGoesByItsHostsAndRefusesToStartWithANameItCannotSend) {
  AgentProcess agent;
  EXPECT_EQ(remote::Job::create()->connect(agent.endpoint()).agent_name(), host_name());
  // Too long by one byte, a space, empty: refused before it listens, naming the option.
  for (const std::string& bad : {std::string(wire::kAgentNameBytes, 'g'), std::string("gpu 7"), std::string()}) {
    // (timeout: an agent that takes the name would serve until killed)
    const CommandRun run = run_command("timeout 10 " + agent_path() + " --listen 127.0.0.1:0 --name '" + bad + "' 2>&1");
    EXPECT_FALSE(run.exited(0)) << "started with --name '" << bad << "'";
    EXPECT_NE(run.out.find("--name"), std::string::npos) << run.out;
  }
}

bool forward(int fd, const RawFrame& f) {
  return write_all(fd, &f.header, sizeof f.header) && write_all(fd, f.body.data(), f.header.length);
}

TEST(Authentication, ARelayThatRenamesTheAgentInItsChallengeGetsOnlyAuthenticationFailed) {
  // Between a job and a real agent holding the job's secret, a relay passes the agent off as the
  // one the job pinned: the job proves a name the agent never gave.
  AgentProcess agent;
  std::uint16_t port = 0;
  const int listen_fd = *engine::tcp_listen(engine::Endpoint{"127.0.0.1", 0}, port);
  std::thread relay([&] {
    const int job_fd = engine::tcp_accept(listen_fd);
    const int agent_fd = *engine::tcp_connect(*engine::parse_endpoint(agent.endpoint()));
    RawFrame f;
    wire::Challenge c{};
    std::string why;
    if (read_frame(job_fd, f) && forward(agent_fd, f) && read_frame(agent_fd, f) && wire::passed(wire::decode(f.bytes(), c), why)) {
      wire::set_fixed_string(c.name, "the-agent-meant");
      if (send_msg(job_fd, wire::MsgType::kChallenge, c) && read_frame(job_fd, f) && forward(agent_fd, f) &&
          read_frame(agent_fd, f)) {
        forward(job_fd, f);  // the agent's answer to the proof
      }
    }
    ::close(agent_fd);
    ::close(job_fd);
  });
  remote::LinkOptions pinned;
  pinned.agent_name = "the-agent-meant";
  const std::string why = connect_error("127.0.0.1:" + std::to_string(port), pinned);
  relay.join();
  ::close(listen_fd);
  EXPECT_NE(why.find("refused the job: authentication failed"), std::string::npos) << why;
  EXPECT_EQ(connect_error(agent.endpoint()), "");  // the agent serves on
}

// Writes the frame of `msg` in two pieces: its header after `first`, its body `gap` later.
template <class M>
void send_in_two(int fd, const M& msg, std::chrono::milliseconds first, std::chrono::milliseconds gap) {
  const auto f = wire::encode(msg);
  const auto* bytes = reinterpret_cast<const char*>(&f);
  std::this_thread::sleep_for(first);
  write_all(fd, bytes, sizeof(wire::FrameHeader));  // may fail once refused: not checked
  std::this_thread::sleep_for(gap);
  write_all(fd, bytes + sizeof(wire::FrameHeader), sizeof f - sizeof(wire::FrameHeader));
}

TEST(Authentication, AHandshakeSpreadPastItsOneDeadlineIsRefusedThoughEachPieceCameWithinIt) {
  // Each piece comes 0.9 of the bound after the one before: a bound per read lets all of them in.
  constexpr int kBoundMs = 1000;
  const auto gap = std::chrono::milliseconds(kBoundMs * 9 / 10);
  AgentProcess agent({"--handshake-ms", std::to_string(kBoundMs)});
  RawClient c(agent.endpoint());
  const engine::Secret secret = test_secret();
  wire::Transcript t;
  t.client = wire::fresh_nonce();
  wire::Hello h{wire::kMagic, wire::kVersion, 0, 0, 0};
  std::copy(t.client.begin(), t.client.end(), h.nonce);
  send_in_two(c.fd(), h, std::chrono::milliseconds(0), gap);  // at once, and 0.9 in
  const wire::Challenge challenge = read_challenge(c.fd());
  t.agent = wire::to_array(challenge.nonce);
  t.name = wire::to_array(challenge.name);
  send_in_two(c.fd(), proof_of(wire::client_proof(secret.bytes, t)), gap, gap);  // 1.8 and 2.7 in
  // A right proof, too late: the peer learns only that (the agent's log says "no complete proof
  // within the handshake's 1000 ms of connecting").
  EXPECT_EQ(c.failure_text(), "authentication failed");
}

TEST(Authentication, ASilentConnectionIsRefusedAtItsDeadlineNotBeforeWithTheReason) {
  // Nothing but another silent connection happens in the agent meanwhile: its own clock must end
  // the handshake, and the newcomer, which wakes it 0.6 of the bound in, must end it neither
  // early nor at the newcomer's own deadline (0.6 of the bound later).
  constexpr int kBoundMs = 1000;
  AgentProcess agent({"--handshake-ms", std::to_string(kBoundMs)});
  const auto connected = std::chrono::steady_clock::now();
  RawClient c(agent.endpoint());
  std::this_thread::sleep_for(std::chrono::milliseconds(kBoundMs * 6 / 10));
  RawClient newcomer(agent.endpoint());
  EXPECT_EQ(c.failure_text(), "no complete first frame (hello or join) within the handshake's 1000 ms of connecting");
  EXPECT_GE(std::chrono::steady_clock::now() - connected, std::chrono::milliseconds(kBoundMs));
  char byte;
  EXPECT_TRUE(::recv(newcomer.fd(), &byte, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN)
      << "the newcomer was refused with the first: the poll waited for the farthest deadline";
}

TEST(Authentication, AJobThatHoldsASecretRefusesAnAgentThatRunsOpen) {
  AgentProcess open_agent({}, /*open=*/true);
  const std::string why = connect_error(open_agent.endpoint());
  EXPECT_NE(why.find("runs without a secret"), std::string::npos) << why;
  // A client without a secret is served by it: a zero proof, a welcome that proves nothing.
  RawClient c(open_agent.endpoint());
  send_msg(c.fd(), wire::MsgType::kHello, wire::Hello{wire::kMagic, wire::kVersion, 0, 0, 0});
  EXPECT_EQ(read_challenge(c.fd()).auth, 0u);
  send_msg(c.fd(), wire::MsgType::kProof, wire::Proof{});
  RawFrame f;
  ASSERT_TRUE(read_frame(c.fd(), f));
  wire::WelcomeView w;
  std::string decode_why;
  ASSERT_TRUE(wire::passed(wire::decode(f.bytes(), w), decode_why)) << decode_why;
  EXPECT_EQ(w.fixed.auth, 0u);
}

TEST(Authentication, TheAgentRefusesToListenBeyondLoopbackWithoutASecret) {
  // timeout: an agent that listened anyway would otherwise hold the test forever.
  const std::string command = "timeout 10 env -u RIG_SECRET_FILE -u RIG_SECRET " + agent_path() +
                              " --listen 0.0.0.0:0 2>&1";
  const CommandRun run = run_command(command);
  EXPECT_TRUE(run.exited(1)) << run.status;
  EXPECT_NE(run.out.find("refusing to listen on 0.0.0.0 without a secret"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("listening"), std::string::npos) << run.out;
}

TEST(Authentication, DuringARotationJobsWithEitherSecretAreWelcomed) {
  const engine::PrivateSecretFile next = *engine::PrivateSecretFile::make();
  const char* current = std::getenv("RIG_SECRET_FILE");
  ASSERT_NE(current, nullptr);
  AgentProcess agent({"--secret-file", current, "--secret-file", next.path()});
  EXPECT_EQ(connect_error(agent.endpoint()), "");
  EXPECT_EQ(connect_error(agent.endpoint(), next.path()), "");
  const engine::PrivateSecretFile neither = *engine::PrivateSecretFile::make();
  EXPECT_NE(connect_error(agent.endpoint(), neither.path()), "");
}

TEST(Authentication, SighupRereadsTheSecretFiles) {
  const engine::PrivateSecretFile file = *engine::PrivateSecretFile::make();
  const engine::PrivateSecretFile replacement = *engine::PrivateSecretFile::make();
  const std::string old_copy = copy_secret(*engine::read_secret_file(file.path()), file);
  AgentProcess agent({"--secret-file", file.path()});
  ASSERT_EQ(connect_error(agent.endpoint(), file.path()), "");
  const engine::Secret fresh = *engine::read_secret_file(replacement.path());
  std::ofstream(file.path(), std::ios::trunc) << std::string(fresh.bytes.begin(), fresh.bytes.end());
  agent.signal(SIGHUP);
  // Observable only by connecting: the new secret opens a job once the agent has reread it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string why = "never tried";
  while (std::chrono::steady_clock::now() < deadline && !(why = connect_error(agent.endpoint(), replacement.path())).empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(why, "");
  EXPECT_NE(connect_error(agent.endpoint(), old_copy), "");
  std::remove(old_copy.c_str());
  EXPECT_TRUE(agent.alive());
}

}  // namespace
}  // namespace rig::test
