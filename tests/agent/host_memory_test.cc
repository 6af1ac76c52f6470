// One bound on the agent's host memory (issue 40 item 3): staging and the RAM of host and
// simulated objects of all jobs together, under rig-agent --max-host-bytes. Past it an alloc is
// None and a handover's staging fails its job, each naming the limit; the other jobs go on,
// and what a job held is given back when it ends. Real rig-agent processes, raw clients; and
// the account itself (HostMemoryLimit) at the byte.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent_process.h"
#include "devices/host_memory_limit.h"
#include "process_facts.h"
#include "raw_peer.h"
#include "rig/remote/job.h"
#include "rig/remote/link.h"

namespace rig::test {
namespace {

constexpr std::uint64_t kMiB = 1u << 20;

// The agent's host memory figures, from a status query of a job of its own.
nlohmann::json host_memory(const AgentProcess& agent) {
  auto job = remote::Job::create();
  return nlohmann::json::parse(job->connect(agent.endpoint()).agent_status())["host_memory"];
}

std::uint64_t held(const AgentProcess& agent) { return host_memory(agent)["held"].get<std::uint64_t>(); }

// A handover of device 1 that copies 64 bytes from the client into object `id`, and its bytes;
// whether its report came (the job goes on).
bool round_trip(RawClient& c, std::uint64_t id, std::uint64_t value) {
  std::vector<std::byte> out;
  append_handover(out, 1, value, {copy_part(client_side(), object(id), 64)});
  append_msg(out, wire::MsgType::kBytes, wire::Bytes{1, 0, value, 0, 64, 0}, std::vector<std::byte>(64, std::byte{7}));
  if (!write_all(c.fd(), out.data(), out.size())) return false;
  const auto got = frames_until(c.fd(), [&](const RawFrame& f) {
    return is(f, wire::MsgType::kFailure) || (is(f, wire::MsgType::kDone) && done_value(f) == value);
  });
  return !got.empty() && is(got.back(), wire::MsgType::kDone);
}

// Value 1 of device 1 waits for device 2's value 1, which never comes, so the bytes of value 2
// (a copy of `bytes` from the client into object `id`) must wait in staging.
void stage_behind_a_wait(RawClient& c, std::uint64_t id, std::uint64_t bytes) {
  send_handover(c, 1, 1, {}, {wire::Wait{2, 0, 1}});
  send_handover(c, 1, 2, {copy_part(client_side(), object(id), bytes)});
}

TEST(AgentHostMemory, AJobPastTheAgentsLimitIsRefusedNamingItAndTheOtherJobsGoOn) {
  // Each job within its own limits (1 GiB of staging, 1 GiB a device): only the sum passes.
  AgentProcess agent({"--max-host-bytes", "8MiB"});
  RawClient a(agent.endpoint()), b(agent.endpoint()), c(agent.endpoint());
  a.hello();
  b.hello();
  c.hello();
  ASSERT_EQ(alloc(a, 1, 3 * kMiB), wire::AnswerStatus::kOk);
  ASSERT_EQ(alloc(b, 1, 3 * kMiB), wire::AnswerStatus::kOk);
  ASSERT_EQ(alloc(c, 5, 3 * kMiB / 2), wire::AnswerStatus::kOk);  // 7.5 MiB held
  const AllocAnswer refused = alloc_answer(c, 6, kMiB);
  EXPECT_EQ(refused.status, wire::AnswerStatus::kRefused);
  EXPECT_NE(refused.text.find("an object of 1048576 bytes would pass the agent's limit of 8388608 bytes of host "
                              "memory for all jobs (rig-agent --max-host-bytes; 7864320 are held)"),
            std::string::npos)
      << refused.text;
  // Its staging too, which fails the job.
  stage_behind_a_wait(c, 5, 3 * kMiB / 2);
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("staging 1572864 bytes of a hand-over would pass the agent's limit of 8388608 bytes of host "
                     "memory for all jobs (rig-agent --max-host-bytes"),
            std::string::npos)
      << why;
  // The others go on.
  EXPECT_TRUE(round_trip(a, 1, 1));
  EXPECT_TRUE(round_trip(b, 1, 1));
  EXPECT_EQ(alloc(a, 2, 64), wire::AnswerStatus::kOk);
}

TEST(AgentHostMemory, UsageEqualToTheLimitGetsInAndNothingMoreDoes) {
  AgentProcess agent({"--max-host-bytes", "4MiB"});
  RawClient a(agent.endpoint()), b(agent.endpoint());
  a.hello();
  b.hello();
  // Counted as allocated: whole pages from 64 KiB, else 64 bytes at a time.
  ASSERT_EQ(alloc(a, 1, 4 * kMiB - 65536), wire::AnswerStatus::kOk);
  ASSERT_EQ(alloc(b, 1, 65536 - 64), wire::AnswerStatus::kOk);
  EXPECT_EQ(alloc(b, 2, 64), wire::AnswerStatus::kOk);  // == the limit
  EXPECT_EQ(held(agent), 4 * kMiB);
  const AllocAnswer more = alloc_answer(a, 2, 4);  // the least more there is
  EXPECT_EQ(more.status, wire::AnswerStatus::kRefused);
  EXPECT_NE(more.text.find("(rig-agent --max-host-bytes; 4194304 are held)"), std::string::npos) << more.text;
  const nlohmann::json figures = host_memory(agent);
  EXPECT_EQ(figures["limit"], 4 * kMiB);
  EXPECT_EQ(figures["refused"], 1);
}

TEST(AgentHostMemory, WhatAJobHeldIsGivenBackWhenItEndsAndANewJobGetsIt) {
  AgentProcess agent({"--max-host-bytes", "8MiB"});
  RawClient b(agent.endpoint());
  b.hello();
  {
    RawClient a(agent.endpoint());
    a.hello();
    ASSERT_EQ(alloc(a, 5, 4 * kMiB), wire::AnswerStatus::kOk);
    stage_behind_a_wait(a, 5, 2 * kMiB);  // 2 MiB staged while the job lives
    EXPECT_GE(within(std::chrono::seconds(10), [&] { return held(agent) == 6 * kMiB; }).count(), 0)
        << "the agent never held the job's object and staging: " << held(agent);
    EXPECT_EQ(alloc(b, 1, 8 * kMiB), wire::AnswerStatus::kRefused);
  }  // a's connection closes: its job ends
  std::uint64_t id = 2;
  EXPECT_GE(within(std::chrono::seconds(10), [&] { return alloc(b, id++, 8 * kMiB) == wire::AnswerStatus::kOk; }).count(), 0)
      << "the ended job's memory never came back: " << held(agent) << " bytes held";
  EXPECT_EQ(held(agent), 8 * kMiB);
}

// The bytes of device 1's value `value` (a copy from the client of `n` bytes, part 0).
void send_bytes(RawClient& c, std::uint64_t value, std::uint32_t n) {
  ASSERT_TRUE(send_msg(c.fd(), wire::MsgType::kBytes, wire::Bytes{1, 0, value, 0, n, 0},
                       std::vector<std::byte>(n, std::byte{3})));
}

TEST(AgentHostMemory, AJobsOwnSpareStagingGoesBeforeTheLimitRefusesIt) {
  AgentProcess agent({"--max-host-bytes", "12MiB"});
  RawClient c(agent.endpoint());
  c.hello();
  ASSERT_EQ(alloc(c, 5, 6 * kMiB), wire::AnswerStatus::kOk);
  stage_behind_a_wait(c, 5, 3 * kMiB);
  send_bytes(c, 2, 3 * kMiB);
  send_handover(c, 2, 1, {});  // the wait is met: value 2 runs, and its 3 MiB buffer is kept as a spare
  const auto first = frames_until(c.fd(), [](const RawFrame& f) { return is(f, wire::MsgType::kDone) && done_value(f) == 2; });
  ASSERT_TRUE(!first.empty() && is(first.back(), wire::MsgType::kDone));
  EXPECT_EQ(held(agent), 9 * kMiB);
  // 6 MiB more to stage: 15 MiB with the spare, 12 once the job's spare is freed.
  send_handover(c, 1, 3, {}, {wire::Wait{2, 0, 2}});
  send_handover(c, 1, 4, {copy_part(client_side(), object(5), 6 * kMiB)});
  send_bytes(c, 4, 6 * kMiB);
  send_handover(c, 2, 2, {});
  const auto second = frames_until(c.fd(), [](const RawFrame& f) {
    return is(f, wire::MsgType::kFailure) || (is(f, wire::MsgType::kDone) && done_value(f) == 4);
  });
  ASSERT_FALSE(second.empty());
  EXPECT_TRUE(is(second.back(), wire::MsgType::kDone)) << "the job failed though its spare would have made room";
}

TEST(AgentHostMemory, TheDefaultLimitIsHalfTheMachinesMemoryAndTheStatusSaysIt) {
  AgentProcess agent;
  const nlohmann::json figures = host_memory(agent);
  EXPECT_EQ(figures["limit"].get<std::uint64_t>(), agent::usable_machine_memory() / 2);
  EXPECT_EQ(figures["held"], 0);
}

TEST(HostMemoryAccount, ClaimsUpToTheLimitToTheByteAndGivesBack) {
  agent::HostMemoryLimit account(1000);
  EXPECT_TRUE(account.claim(1000));
  EXPECT_FALSE(account.claim(1));
  account.give_back(1000);
  EXPECT_TRUE(account.claim(999));
  EXPECT_TRUE(account.claim(1));
  EXPECT_FALSE(account.claim(1));
  EXPECT_FALSE(account.claim(~0ull));  // no wrap
  EXPECT_EQ(account.held(), 1000u);
  EXPECT_EQ(account.refusals(), 3u);
}

TEST(HostMemoryAccount, ThreadsClaimingAtOnceNeverPassTheLimit) {
  agent::HostMemoryLimit account(100000);
  std::atomic<std::uint64_t> claimed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      // Bounded, past the limit's worth: an account that never counted would let them all in.
      for (int i = 0; i < 20000 && account.claim(7); ++i) claimed.fetch_add(7, std::memory_order_relaxed);  // relaxed: joined before read
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(claimed.load(), account.held());
  EXPECT_LE(account.held(), 100000u);
  EXPECT_GT(account.held(), 100000u - 7);
}

}  // namespace
}  // namespace rig::test
