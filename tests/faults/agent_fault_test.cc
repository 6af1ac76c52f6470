// The agent killed (its kernel closes the connections) or stopped (its kernel still acknowledges,
// it answers nothing) while bytes cross to it or from it, over a slowed link so the fault comes
// mid-payload: the job fails with the reason within its bound, a blocked submit returns, no byte
// lands outside its destination; a stopped agent, once resumed, frees the job and serves the next.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "guarded_buffer.h"
#include "in_namespace.h"
#include "process_facts.h"
#include "rig/harness/runtime.h"
#include "rig/remote/job.h"

namespace rig::test {
namespace {

using harness::Driven;
using harness::Work;
using std::chrono::milliseconds;


class AgentFault : public InNamespace {
 protected:
  // A 64 MiB copy to the agent, submitted on a thread; `act` runs once it is under way. Returns
  // how long the submit then took to return (negative: past kJobBound) and its result.
  std::pair<milliseconds, int> copy_to_agent_and(const std::function<void()>& act) {
    net_->slow(200);  // 64 MiB take about 3 s
    std::vector<std::byte> from(kCopyBytes, std::byte{0x5a});
    job_ = remote::Job::create();
    Driven dev(job_->connect(agent_->endpoint(), options()), 1);
    const auto region = dev->alloc(edge::Memory::kDevice, kCopyBytes);
    if (!region) throw std::runtime_error("no region");
    Work w;
    w.to_device(from.data(), *region, 0, kCopyBytes);
    std::atomic<int> rc{-100};  // release/acquire: the submitter's result to this thread
    std::thread submitter([&] { rc.store(dev.submit(w).rc, std::memory_order_release); });
    const std::uint64_t base = net_->bytes_out();
    const bool under_way = within(milliseconds(20000), [&] { return net_->bytes_out() > base + kUnderWay; }).count() >= 0;
    const bool before = rc.load(std::memory_order_acquire) == -100;
    act();
    const milliseconds took = within(kJobBound, [&] { return rc.load(std::memory_order_acquire) != -100; });
    submitter.join();
    EXPECT_TRUE(under_way && before) << "the fault did not come mid-payload";
    return {took, rc.load(std::memory_order_acquire)};
  }
  // A 64 MiB copy from the agent into guarded memory; `act` runs once it is under way. Returns
  // how long the job then took to fail (negative: past kJobBound); the word stays below the value.
  milliseconds copy_back_and(const std::function<void()>& act) {
    GuardedBuffer into(kCopyBytes, 0xee);  // outlives the job (reset below)
    job_ = remote::Job::create();
    milliseconds took{-1};
    {
      Driven dev(job_->connect(agent_->endpoint(), options()), 1);
      const auto region = dev->alloc(edge::Memory::kDevice, kCopyBytes);
      if (!region) throw std::runtime_error("no region");
      net_->slow(200);
      Work w;
      w.to_host(*region, 0, into.data(), kCopyBytes);
      const std::uint64_t value = dev.run(w);
      const std::uint64_t base = net_->bytes_in();
      EXPECT_GE(within(milliseconds(20000), [&] { return net_->bytes_in() > base + kUnderWay; }).count(), 0);
      EXPECT_LT(dev->signaled(), value) << "the copy came back before the fault";
      act();
      took = within(kJobBound, [&] { return job_->failed(); });
      EXPECT_LT(dev->signaled(), value) << "the word took the value of a copy that never fully landed";
    }
    fault_text_ = job_->fault_text();
    job_.reset();
    return took;
  }

  std::shared_ptr<remote::Job> job_;
  std::string fault_text_;
};

TEST_F(AgentFault, KilledWhileACopyGoesToItTheJobFailsWithTheReasonAndTheSubmitReturns) {
  start_agent();
  const auto [took, rc] = copy_to_agent_and([&] { agent_->signal(SIGKILL); });
  EXPECT_GE(took.count(), 0) << "the submit stayed blocked past " << kJobBound.count() << " ms";
  EXPECT_EQ(rc, RIG_FAILED);
  EXPECT_TRUE(job_->failed());
  EXPECT_FALSE(job_->fault_text().empty());
}

TEST_F(AgentFault, KilledWhileACopyComesBackTheJobFailsAndNothingLandsOutsideTheDestination) {
  start_agent();
  const milliseconds took = copy_back_and([&] { agent_->signal(SIGKILL); });
  EXPECT_GE(took.count(), 0) << "the job was not failed within " << kJobBound.count() << " ms";
  EXPECT_FALSE(fault_text_.empty());
}

TEST_F(AgentFault, StoppedWhileACopyGoesToItTheJobFailsWithinTheSilenceBoundAndTheAgentServesOnOnceResumed) {
  start_agent();
  const auto [took, rc] = copy_to_agent_and([&] { agent_->signal(SIGSTOP); });
  EXPECT_GE(took.count(), 0) << "the submit stayed blocked past " << kJobBound.count() << " ms";
  EXPECT_EQ(rc, RIG_FAILED);
  EXPECT_NE(job_->fault_text().find("sent nothing"), std::string::npos) << job_->fault_text();
  job_.reset();
  net_->mend();
  agent_->signal(SIGCONT);
  EXPECT_EQ(connects_within(agent_->endpoint()), "") << "the resumed agent still holds the failed job";
  EXPECT_TRUE(agent_->alive());
}

TEST_F(AgentFault, StoppedInsideAFrameItSendsTheJobFailsWithinTheSilenceBoundAndTheAgentServesOnOnceResumed) {
  start_agent();
  const milliseconds took = copy_back_and([&] { agent_->signal(SIGSTOP); });
  EXPECT_GE(took.count(), 0) << "the job was not failed within " << kJobBound.count() << " ms";
  EXPECT_NE(fault_text_.find("sent nothing"), std::string::npos) << fault_text_;
  net_->mend();
  agent_->signal(SIGCONT);
  EXPECT_EQ(connects_within(agent_->endpoint()), "") << "the resumed agent still holds the failed job";
  EXPECT_TRUE(agent_->alive());
}

}  // namespace
}  // namespace rig::test
