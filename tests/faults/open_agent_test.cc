// A job without a secret takes an agent that runs open only on loopback (issue 40): at any other
// address whoever answers first could pose as one. The address off loopback is this side's end
// of a veth pair (needs root; skipped, saying why, elsewhere).
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "netns.h"
#include "raw_peer.h"
#include "rig/engine/tcp.h"
#include "rig/remote/job.h"
#include "rig/wire/auth.h"
#include "rig/wire/codec.h"

namespace rig::test {
namespace {

// An agent that runs open, faked on `host`: one connection, a challenge that asks for no proof,
// then a welcome for whatever proof comes (its auth `welcome_auth`: 0, as the challenge's, unless
// a test has it say otherwise), then it reads until the job closes.
class OpenFake {
 public:
  explicit OpenFake(const std::string& host, std::uint8_t welcome_auth = 0) : welcome_auth_(welcome_auth) {
    listen_fd_ = *engine::tcp_listen(engine::Endpoint{host, 0}, port_);  // or stops, saying why
    thread_ = std::thread([this] { serve(); });
  }
  ~OpenFake() {
    ::shutdown(listen_fd_, SHUT_RDWR);  // wakes an accept no job came to
    thread_.join();
    ::close(listen_fd_);
  }
  OpenFake(const OpenFake&) = delete;
  OpenFake& operator=(const OpenFake&) = delete;
  std::uint16_t port() const { return port_; }

 private:
  void serve() {
    const int fd = engine::tcp_accept(listen_fd_);
    if (fd < 0) return;
    set_receive_timeout(fd, 10000);
    RawFrame f;
    wire::Challenge c{};
    const wire::Nonce nonce = wire::fresh_nonce();
    std::copy(nonce.begin(), nonce.end(), c.nonce);
    c.auth = 0;
    wire::set_fixed_string(c.name, "open-fake-agent");
    if (read_frame(fd, f) && send_msg(fd, wire::MsgType::kChallenge, c) && read_frame(fd, f)) {
      const auto accounts = fake_accounts(0);
      wire::Welcome w{wire::kMagic, wire::kVersion, welcome_auth_, 0, static_cast<std::uint32_t>(accounts.size())};
      if (welcome_auth_ != 0) w.mac[0] = 1;  // as if it proved something: an open agent's welcome carries none
      send_msg(fd, wire::MsgType::kWelcome, w, std::as_bytes(std::span(accounts)));
      drain(fd);
    }
    ::close(fd);
  }
  std::uint8_t welcome_auth_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

// The test process's secret variables away while it lives (a job then holds no secret), put
// back after. No other thread of the process reads them meanwhile.
class NoSecret {
 public:
  NoSecret() {
    for (const char* name : {"RIG_SECRET_FILE", "RIG_SECRET"}) {
      if (const char* v = std::getenv(name)) saved_[name == std::string("RIG_SECRET") ? 1 : 0] = v;
      ::unsetenv(name);
    }
  }
  ~NoSecret() {
    if (saved_[0]) ::setenv("RIG_SECRET_FILE", saved_[0]->c_str(), 1);
    if (saved_[1]) ::setenv("RIG_SECRET", saved_[1]->c_str(), 1);
  }
  NoSecret(const NoSecret&) = delete;
  NoSecret& operator=(const NoSecret&) = delete;

 private:
  std::optional<std::string> saved_[2];
};

// What connecting to `endpoint` without a secret throws, or "".
std::string connect_without_secret(const std::string& endpoint) {
  auto job = remote::Job::create();
  const NoSecret none;
  try {
    job->connect(endpoint);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(OpenAgent, AJobWithoutASecretTakesAnOpenAgentOnLoopback) {
  const OpenFake fake("127.0.0.1");
  EXPECT_EQ(connect_without_secret("127.0.0.1:" + std::to_string(fake.port())), "");
}

TEST(OpenAgent, AWelcomeThatClaimsAuthenticationAfterAnOpenChallengeIsRefused) {
  // Its challenge asked for no proof; its welcome says the handshake was authenticated. A job
  // without a secret cannot check such a claim, and the two must agree.
  const OpenFake fake("127.0.0.1", /*welcome_auth=*/1);
  const std::string at = "127.0.0.1:" + std::to_string(fake.port());
  EXPECT_EQ(connect_without_secret(at),
            "handshake with agent " + at + ": authentication failed (the agent's proof does not match this job's secret)");
}

TEST(OpenAgent, AJobWithoutASecretRefusesAnOpenAgentBeyondLoopback) {
  if (const std::string why = NetnsPair::unavailable(); !why.empty()) GTEST_SKIP() << "skipped: " << why;
  const NetnsPair net;
  const OpenFake fake(net.outside_address());
  const std::string at = net.outside_address() + ":" + std::to_string(fake.port());
  const std::string why = connect_without_secret(at);
  EXPECT_NE(why.find("the agent runs without a secret at " + at + ", which is not loopback"), std::string::npos)
      << why;
  EXPECT_NE(why.find("RIG_SECRET_FILE"), std::string::npos) << why;
}

}  // namespace
}  // namespace rig::test
