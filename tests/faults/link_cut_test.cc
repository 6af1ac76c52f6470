// The link cut (every packet dropped both ways, no reset or close reaches either end) while the
// job is idle and while bytes cross it either way: the job fails within its silence bound with
// the reason, a blocked submit returns, no byte lands outside its destination, and the agent ends
// the job within its own bound and serves the next.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "guarded_buffer.h"
#include "in_namespace.h"
#include "process_facts.h"
#include "rig/engine/tcp.h"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"

namespace rig::test {
namespace {

using harness::Driven;
using harness::Work;
using std::chrono::milliseconds;


class LinkCut : public InNamespace {};

TEST_F(LinkCut, AnIdleJobFailsWithinTheSilenceBoundAndTheAgentServesTheNextJob) {
  start_agent();
  auto job = remote::Job::create();
  Driven dev(job->connect(agent_->endpoint(), options()), 1);
  ASSERT_TRUE(dev->alloc(edge::Memory::kDevice, 4096));
  net_->cut();
  const milliseconds took = within(kJobBound, [&] { return job->failed(); });
  EXPECT_GE(took.count(), 0) << "an idle job on a cut link was not failed within " << kJobBound.count() << " ms";
  // The bound is TCP's own for the unanswered pings too (TCP_USER_TIMEOUT = silence_ms): under
  // a sanitizer, where the link's receiving thread runs late, either may end the job first.
  const std::string why = job->fault_text();
  EXPECT_TRUE(why.find("sent nothing") != std::string::npos ||
              (kScale > 1 && why.find("TCP gave up") != std::string::npos))
      << why;
  net_->mend();
  EXPECT_EQ(connects_within(agent_->endpoint()), "") << "the agent still holds the cut job (--max-jobs 1)";
}

TEST_F(LinkCut, AnIdleJobWhosePacketsVanishSaysTcpGaveUpNotThatTheAgentWasSilent) {
  start_agent();
  remote::LinkOptions o = options();
  o.keepalive_ms = 0;  // no pings, and no silence bound: only TCP finds the cut
  o.silence_ms = 0;
  auto job = remote::Job::create();
  Driven dev(job->connect(agent_->endpoint(), o), 1);
  ASSERT_TRUE(dev->alloc(edge::Memory::kDevice, 4096));
  net_->cut_replies();
  // Its keepalive probes go unanswered: it gives up kUserTimeoutMs after the last byte came.
  const milliseconds bound{engine::kUserTimeoutMs + kSlackMs};
  const milliseconds took = within(bound, [&] { return job->failed(); });
  EXPECT_GE(took.count(), 0) << "an idle job on a cut link was not failed within " << bound.count() << " ms";
  EXPECT_NE(job->fault_text().find("TCP gave up on the connection"), std::string::npos) << job->fault_text();
  net_->mend();
  EXPECT_EQ(connects_within(agent_->endpoint()), "") << "the agent still holds the cut job (--max-jobs 1)";
}

TEST_F(LinkCut, ACopyToTheAgentCutMidTransferFailsTheJobAndTheBlockedSubmitReturns) {
  start_agent();
  net_->slow(200);  // 64 MiB take about 3 s: the cut comes in the middle
  std::vector<std::byte> from(kCopyBytes, std::byte{0x5a});  // outlives the job
  auto job = remote::Job::create();
  Driven dev(job->connect(agent_->endpoint(), options()), 1);
  const auto region = dev->alloc(edge::Memory::kDevice, kCopyBytes);
  ASSERT_TRUE(region);
  Work w;
  w.to_device(from.data(), *region, 0, kCopyBytes);
  // release: pairs with the acquire below (the submitter's result).
  std::atomic<int> rc{-100};
  std::thread submitter([&] { rc.store(dev.submit(w).rc, std::memory_order_release); });
  const std::uint64_t base = net_->bytes_out();
  ASSERT_GE(within(milliseconds(20000), [&] { return net_->bytes_out() > base + kUnderWay; }).count(), 0);
  ASSERT_EQ(rc.load(std::memory_order_acquire), -100) << "the copy was sent before the cut";
  net_->cut();
  const milliseconds took = within(kJobBound, [&] { return rc.load(std::memory_order_acquire) != -100; });
  submitter.join();
  EXPECT_GE(took.count(), 0) << "the submit stayed blocked past " << kJobBound.count() << " ms";
  EXPECT_EQ(rc.load(std::memory_order_acquire), RIG_FAILED);
  EXPECT_TRUE(job->failed());
  EXPECT_NE(job->fault_text().find("sent nothing"), std::string::npos) << job->fault_text();
  net_->mend();
  EXPECT_EQ(connects_within(agent_->endpoint()), "") << "the agent still holds the job cut mid-payload";
}

TEST_F(LinkCut, ACopyBackCutMidTransferFailsTheJobAndWritesNothingOutsideItsDestination) {
  start_agent();
  GuardedBuffer into(kCopyBytes, 0xee);  // a write past either end faults; outlives the job
  auto job = remote::Job::create();
  Driven dev(job->connect(agent_->endpoint(), options()), 1);
  const auto region = dev->alloc(edge::Memory::kDevice, kCopyBytes);
  ASSERT_TRUE(region);
  net_->slow(200);
  Work w;
  w.to_host(*region, 0, into.data(), kCopyBytes);
  const std::uint64_t value = dev.run(w);
  const std::uint64_t base = net_->bytes_in();
  ASSERT_GE(within(milliseconds(20000), [&] { return net_->bytes_in() > base + kUnderWay; }).count(), 0);
  ASSERT_LT(dev->signaled(), value) << "the copy came back before the cut";
  net_->cut();
  const milliseconds took = within(kJobBound, [&] { return job->failed(); });
  EXPECT_GE(took.count(), 0) << "a job cut mid-payload was not failed within " << kJobBound.count() << " ms";
  EXPECT_NE(job->fault_text().find("sent nothing"), std::string::npos) << job->fault_text();
  EXPECT_LT(dev->signaled(), value) << "the word took the value of a copy that never fully landed";
  net_->mend();
  EXPECT_EQ(connects_within(agent_->endpoint()), "") << "the agent still holds the job cut mid-payload";
}

}  // namespace
}  // namespace rig::test
