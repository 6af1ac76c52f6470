// The status query (wire kStatusQuery / kStatus, kFeatureStatus): the agent answers with its
// own figures as JSON; a client asks only an agent that accepted the feature; an answer that
// breaks the protocol fails the job with the reason. Real rig-agent processes, and fake agents
// for what a real one never sends.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent_process.h"
#include "command.h"
#include "raw_peer.h"
#include "rig/edge.hpp"
#include "rig/engine/syscall_count.h"
#include "rig/engine/task_usage.h"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"
#include "rig/remote/link.h"
#include "rig/wire/codec.h"
#include "rig/wire/version.h"

namespace rig::test {
namespace {

using remote::Job;

std::string root_cause(Job& job) {
  for (int i = 0; i < 5000 && !job.failed(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return job.failed() ? job.fault_text() : std::string();
}

TEST(StatusQuery, TheAnswerNamesTheTransportSettingsTheAgentRunsWithAndNoSecret) {
  AgentProcess agent({"--backend", "plain", "--gather-us", "37", "--poll-us", "5", "--silence-ms", "4321",
                      "--max-stripes", "3"});
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  const std::string text = link.agent_status();
  const nlohmann::json s = nlohmann::json::parse(text)["settings"];
  ASSERT_TRUE(s.is_object()) << text;
  EXPECT_EQ(s["backend"], "plain");
  EXPECT_EQ(s["gather_us"], 37);
  EXPECT_EQ(s["poll_us"], 5);
  EXPECT_EQ(s["silence_ms"], 4321);
  EXPECT_EQ(s["max_stripes"], 3);
  EXPECT_TRUE(s["sq_polling"].is_boolean());
  // Neither the secret nor where it comes from.
  const char* file = std::getenv("RIG_SECRET_FILE");
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(text.find(file), std::string::npos);
  EXPECT_EQ(text.find("secret"), std::string::npos);
}

TEST(StatusQuery, TheAgentAnswersWithItsVersionJobsBytesAndEveryThreadsFigures) {
  AgentProcess agent;
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  ASSERT_TRUE(link.agent_status_supported());
  {  // some work first, so the job's counters and the session thread's figures move
    std::byte buf[64]{};
    harness::Driven dev(link, 1);
    auto r = dev->alloc(edge::Memory::kDevice, 4096);
    ASSERT_TRUE(r.has_value());
    harness::Work w;
    w.to_host(*r, 0, buf, sizeof buf);
    dev.wait(dev.run(w));
    dev->free(*r);
  }
  const nlohmann::json s = nlohmann::json::parse(link.agent_status());
  EXPECT_EQ(s["agent"], "rig-agent");
  EXPECT_EQ(s["version"], wire::software_version());
  EXPECT_EQ(s["protocol"], wire::kVersion);
  EXPECT_EQ(s["pid"], agent.pid());
  EXPECT_GE(s["jobs"].get<int>(), 1);
  EXPECT_GT(s["bytes_in"].get<std::uint64_t>(), 0u);
  EXPECT_GT(s["bytes_out"].get<std::uint64_t>(), 0u);
  EXPECT_GT(s["job"]["messages_received"].get<std::uint64_t>(), 0u);
  EXPECT_GT(s["job"]["reads"].get<std::uint64_t>(), 0u);
  EXPECT_GT(s["job"]["send_calls"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(s["threads_left_out"], 0);
  ASSERT_TRUE(s["threads"].is_array());
  ASSERT_GE(s["threads"].size(), 2u);  // the accept loop and this job's session at least
  std::uint64_t syscalls = 0, cpu = 0;
  for (const nlohmann::json& t : s["threads"]) {
    EXPECT_GT(t["tid"].get<int>(), 0);
    EXPECT_TRUE(t["name"].is_string());
    EXPECT_TRUE(t["voluntary"].is_number_unsigned());
    EXPECT_TRUE(t["involuntary"].is_number_unsigned());
    syscalls += t["syscalls"].get<std::uint64_t>();
    cpu += t["cpu_ns"].get<std::uint64_t>();
  }
  EXPECT_GT(syscalls, 0u);  // the session's receives and sends, counted by the engine
  EXPECT_GT(cpu, 0u);
  EXPECT_EQ(s["syscalls_total"].get<std::uint64_t>() >= syscalls, true);
  // A second query sees the first one's receive and send: the counts only grow.
  const nlohmann::json again = nlohmann::json::parse(link.agent_status());
  EXPECT_GT(again["syscalls_total"].get<std::uint64_t>(), s["syscalls_total"].get<std::uint64_t>());
  job->close();
}

// Striped bytes count once: the stripes' sends and receives are in the connection's bytes
// already (frame headers included), and bytes_striped_* only says how much of it crossed there.
// Checked while the job runs (its own counters) and after it ended (the agent's totals).
TEST(StatusQuery, TheTotalsCountJobsRefusalsAndFailedHandshakesSinceTheStart) {
  AgentProcess agent({"--max-jobs", "1", "--max-connections", "3"});
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  for (int i = 0; i < 2; ++i) {  // two strangers' proofs, all zeros (two, not one: a count apart from the next)
    RawClient stranger(agent.endpoint());
    send_msg(stranger.fd(), wire::MsgType::kHello, wire::Hello{wire::kMagic, wire::kVersion, 0, 0, 0});
    RawFrame challenge;
    ASSERT_TRUE(read_frame(stranger.fd(), challenge));
    send_msg(stranger.fd(), wire::MsgType::kProof, wire::Proof{});
    EXPECT_EQ(stranger.failure_text(), "authentication failed");
  }
  {  // a first frame that is no hello
    RawClient confused(agent.endpoint());
    send_msg(confused.fd(), wire::MsgType::kProof, wire::Proof{});
    EXPECT_NE(confused.failure_text(), "");
  }
  // A second job, past --max-jobs 1; then, with it and two silent connections held, a fourth
  // connection past --max-connections 3.
  EXPECT_THROW(Job::create()->connect(agent.endpoint()), std::exception);
  // The refused connections' threads have let go of their places once only the job's is counted.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (nlohmann::json::parse(link.agent_status())["connections"] != 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  RawClient a(agent.endpoint()), b(agent.endpoint());  // held silent: no failed handshake yet
  RawClient fourth(agent.endpoint());
  EXPECT_NE(fourth.failure_text().find("limit of 3 connections"), std::string::npos);
  const nlohmann::json t = nlohmann::json::parse(link.agent_status())["totals"];
  EXPECT_EQ(t["jobs"], 1) << t;
  EXPECT_EQ(t["jobs_failed"], 0) << t;
  EXPECT_EQ(t["refused"]["jobs"], 1) << t;
  EXPECT_EQ(t["refused"]["connections"], 1) << t;
  EXPECT_EQ(t["refused"]["stopping"], 0) << t;
  EXPECT_EQ(t["authentication_failures"], 2) << t;
  EXPECT_EQ(t["handshakes_failed"], 1) << t;
  EXPECT_EQ(t["handshakes_shed"], 0) << t;
}

TEST(StatusQuery, BytesThatCrossTheStripesCountOnce) {
  AgentProcess agent;
  constexpr std::uint64_t kBytes = 8u << 20;
  {
    auto job = Job::create();
    remote::LinkOptions o;
    o.stripes = 2;
    o.stripe_min_bytes = 64 * 1024;
    remote::Link& link = job->connect(agent.endpoint(), o);
    ASSERT_EQ(link.stripes(), 2u);
    std::vector<std::byte> down(kBytes);
    harness::Driven dev(link, 1);
    auto r = dev->alloc(edge::Memory::kDevice, kBytes);
    ASSERT_TRUE(r.has_value());
    std::vector<std::byte> up(kBytes, std::byte{7});
    harness::Work w;
    w.to_device(up.data(), *r, 0, kBytes).to_host(*r, 0, down.data(), kBytes);
    dev.wait(dev.run(w));
    ASSERT_EQ(up, down);
    ASSERT_GE(link.counters().bytes_striped_out, kBytes);  // it did cross the stripes
    const nlohmann::json s = nlohmann::json::parse(link.agent_status());
    for (const char* k : {"bytes_received", "bytes_sent"}) {
      EXPECT_GE(s["job"][k].get<std::uint64_t>(), kBytes) << k;
      EXPECT_LT(s["job"][k].get<std::uint64_t>(), kBytes + kBytes / 8) << k << ": counted twice";
    }
    dev->free(*r);
    job->close();
  }
  // The ended job's bytes join the agent's totals once it has ended on the agent's side.
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  nlohmann::json s;
  for (int i = 0; i < 500; ++i) {
    s = nlohmann::json::parse(link.agent_status());
    if (s["bytes_in"].get<std::uint64_t>() >= kBytes) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const char* k : {"bytes_in", "bytes_out"}) {
    EXPECT_GE(s[k].get<std::uint64_t>(), kBytes) << k;
    EXPECT_LT(s[k].get<std::uint64_t>(), kBytes + kBytes / 8) << k << ": counted twice";
  }
  job->close();
}

TEST(StatusQuery, AnAgentThatDidNotAcceptTheFeatureIsNeverAsked) {
  bool asked = false;
  FakeAgent agent(1, [&](int fd) {  // accepts no feature: an agent older than the query
    RawFrame f;
    while (read_frame(fd, f)) asked = asked || f.header.type == static_cast<std::uint16_t>(wire::MsgType::kStatusQuery);
  });
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  EXPECT_FALSE(link.agent_status_supported());
  try {
    link.agent_status();
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("does not answer status queries"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(job->failed());
  job->close();
  agent.join();
  EXPECT_FALSE(asked);
}

// A fake agent that accepts the status query and answers the first one with `answer(fd, id)`.
void answer_query(int fd, const std::function<void(int, std::uint64_t)>& answer) {
  RawFrame f;
  while (read_frame(fd, f)) {
    if (f.header.type != static_cast<std::uint16_t>(wire::MsgType::kStatusQuery)) continue;
    wire::StatusQuery q{};
    std::string why;
    if (!wire::passed(wire::decode(f.bytes(), q), why)) return;
    answer(fd, q.id);
    drain(fd);
    return;
  }
}

TEST(StatusQuery, AnOversizedAnswerIsRejectedWithTheReason) {
  FakeAgent agent(
      1,
      [](int fd) {
        answer_query(fd, [](int fd, std::uint64_t id) {
          const std::string text(wire::kMaxStatusText + 1, 'x');
          send_msg(fd, wire::MsgType::kStatus, wire::Status{id, static_cast<std::uint32_t>(text.size()), 0},
                   std::as_bytes(std::span(text)));
        });
      },
      true, wire::kFeatureStatus);
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  ASSERT_TRUE(link.agent_status_supported());
  EXPECT_THROW(link.agent_status(), edge::Fault);
  const std::string why = root_cause(*job);
  EXPECT_NE(why.find("protocol violation by the agent"), std::string::npos) << why;
  EXPECT_NE(why.find("status: text of 65537 bytes, longer than 65536"), std::string::npos) << why;
  job->close();
}

TEST(StatusQuery, AnAnswerToAQueryNeverAskedFailsTheJob) {
  FakeAgent agent(
      1,
      [](int fd) {
        answer_query(fd, [](int fd, std::uint64_t id) {
          const std::string text = "{}";
          send_msg(fd, wire::MsgType::kStatus, wire::Status{id + 1000, static_cast<std::uint32_t>(text.size()), 0},
                   std::as_bytes(std::span(text)));
        });
      },
      true, wire::kFeatureStatus);
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  EXPECT_THROW(link.agent_status(), edge::Fault);
  const std::string why = root_cause(*job);
  EXPECT_NE(why.find("to no pending request"), std::string::npos) << why;
  job->close();
}

TEST(StatusQuery, AClientThatDidNotOfferTheFeatureCannotAsk) {
  AgentProcess agent;
  RawClient c(agent.endpoint());
  c.hello();  // offers nothing
  const auto f = wire::encode_status_query(1);
  ASSERT_TRUE(write_all(c.fd(), &f, sizeof f));
  const std::string why = c.failure_text();
  EXPECT_NE(why.find("unexpected status query message"), std::string::npos) << why;
}

TEST(StatusQuery, RigInfoPrintsAnAgentsStatus) {
  AgentProcess agent;
  const CommandRun out = run_command(std::string(RIG_INFO_PATH) + " --json --agent " + agent.endpoint() + " 2>&1");
  ASSERT_TRUE(out.exited(0)) << out.out;
  const nlohmann::json j = nlohmann::json::parse(out.out);
  EXPECT_EQ(j["endpoint"], agent.endpoint());
  EXPECT_EQ(j["status"]["pid"], agent.pid());
  EXPECT_EQ(j["status"]["jobs"], 1);  // rig-info's own job
  EXPECT_EQ(j["devices"][0]["name"], "host");
  EXPECT_FALSE(j["status"]["threads"].empty());
}

// What rig-bench reads of an agent it started that has no status query: another process's threads
// from /proc, with CPU time and switches but no system calls (they are counted in that process).
TEST(ThreadFigures, AnotherProcesssThreadsAreReadFromProcWithoutSystemCalls) {
  AgentProcess agent;
  auto job = Job::create();
  job->connect(agent.endpoint());  // a session thread besides the accept loop
  std::vector<engine::TaskUsage> threads;
  auto named = [&] {
    return std::count_if(threads.begin(), threads.end(), [](const engine::TaskUsage& t) { return t.name == "rig-agent"; });
  };
  for (int i = 0; i < 100 && named() < 2; ++i) {
    wire::Result<std::vector<engine::TaskUsage>> read = engine::task_usage(agent.pid());
    ASSERT_TRUE(read.ok()) << read.outcome().why();
    threads = std::move(*read);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GE(threads.size(), 2u);
  std::uint64_t cpu = 0;
  std::size_t agent_threads = 0;
  for (const engine::TaskUsage& t : threads) {
    EXPECT_GT(t.tid, 0);
    // The agent's own threads, and io_uring's (iou-sqp-PID with SQ polling) among them.
    EXPECT_TRUE(t.name == "rig-agent" || t.name.rfind("iou-", 0) == 0) << t.name;
    agent_threads += t.name == "rig-agent" ? 1 : 0;
    EXPECT_EQ(t.syscalls, 0u);
    cpu += t.cpu_ns;
  }
  EXPECT_GE(agent_threads, 2u);
  EXPECT_GT(cpu, 0u);
  job->close();
  const wire::Outcome gone = engine::task_usage(1 << 30).outcome();  // no such process: the folder named
  EXPECT_EQ(gone.err(), -ENOENT);
  EXPECT_EQ(gone.why(), "cannot read /proc/" + std::to_string(1 << 30) + "/task: No such file or directory");
}

TEST(ThreadFigures, ThisProcesssThreadsCarryTheEnginesSystemCallsAndTheReceivingThreadIsNamed) {
  AgentProcess agent;
  auto job = Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  link.agent_status();  // the receiving thread receives at least once
  bool found = false;
  const wire::Result<std::vector<engine::TaskUsage>> usage = engine::task_usage();
  ASSERT_TRUE(usage.ok()) << usage.outcome().why();
  for (const engine::TaskUsage& t : *usage) {
    if (t.name == "rig-recv") found = t.syscalls > 0;
  }
  EXPECT_TRUE(found);
  const engine::TaskUsage me = engine::this_thread_usage();
  EXPECT_GT(me.syscalls, 0u);  // the status query's send and the handshake's
  EXPECT_GT(me.cpu_ns, 0u);
  job->close();
}

}  // namespace
}  // namespace rig::test
