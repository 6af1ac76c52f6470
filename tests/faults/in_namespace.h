// The fault suite's fixture: a rig-agent in a network namespace of its own, reached over a veth
// link the test can slow, cut or mend. Skips (saying why) where namespaces cannot be made.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "agent_process.h"
#include "netns.h"
#include "rig/remote/link.h"

namespace rig::test {

class InNamespace : public ::testing::Test {
 public:
  // The bounds every test here states and checks: the job's (client) and the agent's.
  // Under a sanitizer the agent itself runs several times slower (zeroing 64 MiB alone takes
  // longer than 500 ms under ThreadSanitizer): the bounds grow with it.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  static constexpr int kScale = 6;
#else
  static constexpr int kScale = 1;
#endif
  static constexpr int kKeepaliveMs = 100 * kScale;
  // The job's bound must pass the longest the agent is rightly silent in these tests' own setup.
  // Allocating and zeroing a 64 MiB region took up to 1.1 s on a loaded 2-core machine and past
  // 3 s under ThreadSanitizer (9000 ms was the bound there until then); since the agent's
  // heartbeat (agent/process/heartbeat.h) pings while it is busy with a message, 3000 ms in
  // every build. The checks stay relative to it (kJobBound), measured from the fault.
  static constexpr int kSilenceMs = 3000;
  // The agent's likewise: the client says nothing on the job's connection while it joins its
  // stripes, right after the welcome; on a loaded 2-core machine that passed 500 ms (the agent
  // failed the job and refused the stripe: "authentication failed", 1 of 30 runs).
  static constexpr int kAgentSilenceMs = 3000;
  // What a loaded 2-core machine (and a sanitizer build) may add to a bound before it counts as
  // missed; a stall that is not detected at all misses it by far more.
  static constexpr int kSlackMs = 4000;
  // Within this, a job whose agent went silent has failed.
  static constexpr std::chrono::milliseconds kJobBound{kSilenceMs + kKeepaliveMs + kSlackMs};
  // The copies the faults interrupt, and how far they are under way when the test acts.
  static constexpr std::size_t kCopyBytes = 64u << 20;
  static constexpr std::uint64_t kUnderWay = 2u << 20;
  // A job's options with those bounds.
  static remote::LinkOptions options() {
    remote::LinkOptions o;
    o.keepalive_ms = kKeepaliveMs;
    o.silence_ms = kSilenceMs;
    return o;
  }

 protected:
  void SetUp() override {
    if (const std::string why = NetnsPair::unavailable(); !why.empty()) GTEST_SKIP() << "skipped: " << why;
    net_ = std::make_unique<NetnsPair>();
  }
  // An agent inside the namespace that serves one job at a time (so a test sees whether the
  // agent freed a job: the next one is served) and ends a silent client's job after
  // kAgentSilenceMs.
  void start_agent(std::vector<std::string> args = {}) {
    args.insert(args.end(), {"--listen", net_->inside_address() + ":0", "--silence-ms",
                             std::to_string(kAgentSilenceMs), "--max-jobs", "1", "--device-budget",
                             std::to_string(256u << 20)});
    agent_ = std::make_unique<AgentProcess>(args, false, net_->wrapper());
  }

  std::unique_ptr<NetnsPair> net_;      // declared first: outlives the agent inside it
  std::unique_ptr<AgentProcess> agent_;
};

}  // namespace rig::test
