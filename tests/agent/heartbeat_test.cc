// The agent's heartbeat (agent/process/heartbeat.h): a session busy with one message for long
// still tells its client it is alive. Its looks driven by the test (no thread, no timing), then
// a real rig-agent busy in a launch longer than its client's silence bound.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "../engine/socket_pair.h"
#include "agent_process.h"
#include "process/heartbeat.h"
#include "rig/engine/connection.h"
#include "rig/harness/runtime.h"
#include "rig/program/program.h"
#include "rig/remote/job.h"
#include "rig/wire/codec.h"

namespace rig::test {
namespace {

using agent::Heartbeat;
using Clock = std::chrono::steady_clock;

// One job's connection, seen from its client's end.
class Watched : public engine::BackendTest {
 protected:
  Watched() : pair_(engine::connected(GetParam())), connection_(std::move(pair_.a), counters_) {}
  // Every frame the client's end has now (the heartbeat's sends return once the kernel took
  // them: nothing is on its way), each checked to be a whole ping.
  int pings_arrived() {
    int n = 0;
    for (;;) {
      wire::Framed<wire::Ping> f{};
      const long got = ::recv(pair_.b->fd(), &f, sizeof f, MSG_DONTWAIT);
      if (got < 0) return n;
      EXPECT_EQ(got, static_cast<long>(sizeof f));
      EXPECT_EQ(f.header.type, static_cast<std::uint16_t>(wire::MsgType::kPing));
      EXPECT_EQ(f.header.length, sizeof(wire::Ping));
      ++n;
    }
  }
  engine::Pair pair_;
  engine::Counters counters_;
  engine::Connection connection_;
  Heartbeat heartbeat_;
};

TEST_P(Watched, ASessionBusyWithOneMessageSinceTheLastLookHasItsClientPingedAtEachLook) {
  Heartbeat::Watch watch(heartbeat_, connection_);
  watch.busy();
  EXPECT_EQ(heartbeat_.look(), 0);  // busy, but maybe only just: not yet
  EXPECT_EQ(pings_arrived(), 0);
  EXPECT_EQ(heartbeat_.look(), 1);
  EXPECT_EQ(pings_arrived(), 1);
  EXPECT_EQ(heartbeat_.look(), 1);  // still on it
  EXPECT_EQ(pings_arrived(), 1);
  EXPECT_EQ(counters_.bytes_sent.load(), 2 * sizeof(wire::Framed<wire::Ping>));
}

TEST_P(Watched, ASessionThatReadsOrMovesOnToAnotherMessageBetweenLooksHasNoPingSent) {
  Heartbeat::Watch watch(heartbeat_, connection_);
  EXPECT_EQ(heartbeat_.look(), 0);  // reading: it echoes its client's pings itself
  EXPECT_EQ(heartbeat_.look(), 0);
  watch.busy();
  EXPECT_EQ(heartbeat_.look(), 0);
  watch.done();
  watch.busy();  // the next message
  EXPECT_EQ(heartbeat_.look(), 0);
  watch.done();
  EXPECT_EQ(heartbeat_.look(), 0);
  EXPECT_EQ(heartbeat_.look(), 0);
  EXPECT_EQ(pings_arrived(), 0);
}

TEST_P(Watched, ALookNeverWaitsForTheTurnAndPingsOnceItIsFree) {
  Heartbeat::Watch watch(heartbeat_, connection_);
  watch.busy();
  heartbeat_.look();
  ASSERT_TRUE(connection_.try_hold());  // a sender of the session's holds it
  // The look returns while the turn is held (the bound is the test's backstop only; the turn is
  // let go after it, so that a look that waits ends too).
  auto look = std::async(std::launch::async, [this] { return heartbeat_.look(); });
  const bool returned = look.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  connection_.release();
  EXPECT_TRUE(returned) << "the look waited for the turn";
  EXPECT_EQ(look.get(), 0);
  EXPECT_EQ(heartbeat_.look(), 1);
  EXPECT_EQ(pings_arrived(), 1);
}

TEST_P(Watched, OnlyTheBusySessionsClientIsPingedAndAGoneOneIsNotLookedAt) {
  engine::Pair other = engine::connected(GetParam());
  engine::Counters other_counters;
  engine::Connection other_connection(std::move(other.a), other_counters);
  Heartbeat::Watch watch(heartbeat_, connection_);
  {
    Heartbeat::Watch gone(heartbeat_, other_connection);
    gone.busy();
    heartbeat_.look();
  }
  watch.busy();
  heartbeat_.look();
  EXPECT_EQ(heartbeat_.look(), 1);
  EXPECT_EQ(pings_arrived(), 1);
  EXPECT_EQ(other_counters.bytes_sent.load(), 0u);
}

TEST_P(Watched, ItsThreadLooksOnItsOwn) {
  Heartbeat::Watch watch(heartbeat_, connection_);
  watch.busy();
  heartbeat_.start();
  // Two periods at least; the bound is only the test's backstop.
  ASSERT_EQ(pair_.b->wait_readable(30000), 0);
  heartbeat_.stop();
  EXPECT_GE(pings_arrived(), 1);
}

INSTANTIATE_TEST_SUITE_P(Backends, Watched, engine::kBackends, engine::backend_test_name);

// A launch on the agent's host that runs n iterations of a loop (two instructions each).
const char* kSpin = R"(
func spin params=1
    param r0, p0
    const r1, 0
    bgeu  r1, r0, done
loop:
    add   r1, r1, 1
    bltu  r1, r0, loop
done:
    ret
end
)";

TEST(BusyAgent, ALaunchLongerThanItsClientsSilenceBoundKeepsItsJob) {
  constexpr int kSilenceMs = 1500;
  const auto kLong = std::chrono::milliseconds(2 * kSilenceMs + 500);
  AgentProcess agent({"--instruction-budget", std::to_string(1ull << 33)});
  remote::LinkOptions options;
  options.keepalive_ms = 1000;
  options.silence_ms = kSilenceMs;
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint(), options);
  harness::Driven host(link, 0);
  auto assembled = program::assemble(kSpin);
  ASSERT_FALSE(std::holds_alternative<std::string>(assembled)) << std::get<std::string>(assembled);
  const std::vector<std::byte> binary = std::get<std::vector<std::byte>>(assembled);
  auto loaded = host->image(std::span<const std::byte>(binary));
  ASSERT_FALSE(std::holds_alternative<std::string>(loaded));
  const remote::Image image = std::get<edge::Loaded<remote::Region, remote::Image>>(loaded).image;
  const auto entry = host->entry(image, "spin");
  ASSERT_TRUE(std::holds_alternative<edge::Entry>(entry));
  // Longer launches until one outlasts the client's bound twice over, whatever this machine's
  // (or this build's) speed: the job must live through it.
  std::uint64_t n = 1u << 20;
  auto took = Clock::duration::zero();
  while (took < kLong) {
    harness::Work w;
    w.words(image.id, std::get<edge::Entry>(entry).function, {static_cast<std::uint32_t>(n)});
    const std::uint64_t frames = link.counters().messages_received;
    const auto start = Clock::now();
    const std::uint64_t v = host.run(w);
    try {
      host.wait(v, 120000);
    } catch (const std::exception& e) {
      FAIL() << e.what() << "; job: " << job->fault_text();
    }
    took = Clock::now() - start;
    ASSERT_FALSE(job->failed()) << job->fault_text() << " (a launch of " << n << " iterations)";
    if (took >= kLong) {
      // The agent's own pings: the client heard it at least every 500 ms (2 of its 250 ms
      // looks) through the launch, less the first gap. The done report is the one other frame
      // (the client's keepalive, at 1 s, never came due, so nothing was echoed).
      const std::uint64_t pings = link.counters().messages_received - frames - 1;
      EXPECT_GE(pings, static_cast<std::uint64_t>(took / std::chrono::milliseconds(500)) - 1)
          << "pings in a launch of " << std::chrono::duration<double>(took).count() << " s";
      break;
    }
    ASSERT_LT(n, 1ull << 31) << "the longest launch took " << std::chrono::duration<double>(took).count() << " s";
    // Aim past kLong, at most 16 times longer than the last (a short run's time is mostly noise).
    const double scale = std::min(16.0, 1.5 * std::chrono::duration<double>(kLong) / std::max(took, Clock::duration(1)));
    n = std::min<std::uint64_t>(static_cast<std::uint64_t>(static_cast<double>(n) * std::max(2.0, scale)), (1ull << 31) - 1);
  }
  EXPECT_GE(took, kLong);
}

}  // namespace
}  // namespace rig::test
