// The polling mode reaches both ends: LinkOptions::poll_us makes the link's receiving thread
// ask for bytes without waiting before it sleeps, and rig-agent's --poll-us does the same for
// each job's session (docs/TUNING.md, "Polling mode"). Seen from outside through the readers'
// count of tries that found no byte: the link's counters, and the job's counters in the agent's
// status query. The engine's own tests (engine/polling_mode_test.cc) pin the spin itself.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "agent_process.h"
#include "rig/edge.hpp"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"
#include "rig/remote/link.h"

namespace rig::test {
namespace {

using remote::Job;

// Round trips through device 1 (one proxy per link), so that both readers wait for bytes.
void round_trips(remote::Link& link, int n) {
  std::byte buf[64]{};
  harness::Driven dev(link, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 4096);
  ASSERT_TRUE(r.has_value());
  for (int i = 0; i < n; ++i) {
    harness::Work w;
    w.to_host(*r, 0, buf, sizeof buf);
    dev.wait(dev.run(w));
  }
  dev->free(*r);
}

std::uint64_t agent_spin_reads(remote::Link& link) {
  return nlohmann::json::parse(link.agent_status())["job"]["spin_reads"].get<std::uint64_t>();
}

// Waits (5 s at most) until `spins` says a reader tried without waiting.
template <class Spins>
bool spun(Spins spins) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (spins() == 0) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(PollingModeEnds, ALinkWithPollUsSpinsBeforeItSleepsAndOneWithoutNever) {
  AgentProcess agent({"--poll-us", "0"});
  auto job = Job::create();
  remote::LinkOptions polling;
  polling.poll_us = 20'000;
  remote::Link& spinning = job->connect(agent.endpoint(), polling);
  round_trips(spinning, 1);
  // relaxed: a statistic of the receiving thread.
  EXPECT_TRUE(spun([&] { return spinning.counters().spin_reads; }));
  auto quiet_job = Job::create();
  remote::LinkOptions sleeping;
  sleeping.poll_us = 0;  // also when RIG_POLL_US is set (the proxy_tests_polling_mode run)
  remote::Link& quiet = quiet_job->connect(agent.endpoint(), sleeping);
  round_trips(quiet, 2);
  EXPECT_EQ(quiet.counters().spin_reads, 0u);
}

TEST(PollingModeEnds, AnAgentWithPollUsSpinsInEachJobsSessionAndOneWithoutNever) {
  AgentProcess polling({"--poll-us", "20000"});
  auto job = Job::create();
  remote::LinkOptions o;
  o.poll_us = 0;
  remote::Link& link = job->connect(polling.endpoint(), o);
  round_trips(link, 1);
  EXPECT_TRUE(spun([&] { return agent_spin_reads(link); }));
  AgentProcess sleeping({"--poll-us", "0"});
  auto quiet_job = Job::create();
  remote::Link& quiet = quiet_job->connect(sleeping.endpoint(), o);
  round_trips(quiet, 2);
  EXPECT_EQ(agent_spin_reads(quiet), 0u);
}

}  // namespace
}  // namespace rig::test
