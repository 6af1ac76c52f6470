// The page's stop (and DESIGN invariant 5), against a scripted agent that controls when the
// bytes of a pending copy land.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>

#include "fixture.h"
#include "agent_process.h"
#include "raw_peer.h"

namespace rig::test {
namespace {

using harness::Driven;
using harness::Work;




void spin_until(const std::function<bool()>& cond) {
  for (int i = 0; i < 5000 && !cond(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Makes the proxy of device 1 on `word` (the agent answers its alloc), submits value 1, a copy
// between objects only (nothing can land here, so stop writes the value at once), stops it,
// and passes the word on as the runtime does: a later device starts it at 0. Null on a failure.
std::unique_ptr<remote::Proxy> stopped_after_one_value(remote::Link& link, std::uint64_t* word) {
  auto p = remote::device(link, *link.account(1), remote::abi::Device{1}).make(word);
  auto r = p->alloc(edge::Memory::kDevice, 64);
  if (!r) return nullptr;
  rig_part part{};
  part.kind = RIG_PART_COPY;
  part.u.copy = rig_copy{harness::region_side(*r, 0), harness::region_side(*r, 0), 1, 64, 64, 64};
  rig_submission s{nullptr, 0, 1, &part};
  const char* why = nullptr;
  if (rig_proxy_submit(p->c_handle(), &s, 1, &why) != RIG_COMMITTED) return nullptr;
  p->stop(std::nullopt);
  if (p->signaled() != 1u) return nullptr;
  std::atomic_ref<std::uint64_t>(*word).store(0, std::memory_order_release);
  return p;
}

TEST(Stop, WithACopyPendingTheWordTakesTheLastValueOnlyAsItsBytesLand) {
  std::promise<void> stopped, seen;
  auto stopped_f = stopped.get_future();
  std::shared_future<void> seen_f = seen.get_future().share();
  struct Release {  // once, and on every path out: the fake agent's thread must end
    std::promise<void>& p;
    bool done = false;
    void operator()() {
      if (!done) p.set_value();
      done = true;
    }
    ~Release() { (*this)(); }
  };
  std::vector<std::byte> payload(256, std::byte{0x42});
  FakeAgent agent(1, [&, seen_f](int fd) {
    answer_next_request(fd);
    const std::uint64_t v = read_handover(fd);
    stopped_f.wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    send_msg(fd, wire::MsgType::kBytes, wire::Bytes{1, 0, v, 0, 256, 0}, payload);
    seen_f.wait();  // the word took v as the bytes landed, with no done report
    send_msg(fd, wire::MsgType::kDone, wire::Done{1, 0, v});  // the word passed it: dropped
    drain(fd);
  });
  Release release_at_end{seen};
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven dev(link, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 256);
  ASSERT_TRUE(r);
  std::vector<std::byte> buf(256);
  Work w;
  w.to_host(*r, 0, buf.data(), 256);
  const std::uint64_t v = dev.run(w);
  dev.stop();
  EXPECT_EQ(dev->signaled(), 0u) << "the word took the last value while bytes could still land";
  stopped.set_value();
  spin_until([&] { return dev->signaled() == v; });
  EXPECT_EQ(dev->signaled(), v) << "the word did not take the last value as the last bytes landed";
  EXPECT_EQ(buf, payload);
  release_at_end();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(job->failed()) << job->fault_text();
  EXPECT_EQ(dev->signaled(), v);  // signaled keeps working after stop
  job->close();
}

TEST(Stop, WithACopyPendingTheWordTakesTheLastValueWhenTheReceivingThreadEnds) {
  std::promise<void> stopped;
  auto stopped_f = stopped.get_future();
  FakeAgent agent(1, [&](int fd) {
    answer_next_request(fd);
    read_handover(fd);
    stopped_f.wait();
    ::shutdown(fd, SHUT_RDWR);  // the agent goes: no byte can land any more
  });
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven dev(link, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  std::vector<std::byte> buf(64, std::byte{1});
  Work w;
  w.to_host(*r, 0, buf.data(), 64);
  const std::uint64_t v = dev.run(w);
  dev.stop();
  EXPECT_EQ(dev->signaled(), 0u);
  stopped.set_value();
  spin_until([&] { return dev->signaled() == v; });
  EXPECT_EQ(dev->signaled(), v);
  EXPECT_EQ(buf, std::vector<std::byte>(64, std::byte{1}));  // nothing landed
}

TEST(Stop, AfterTheReceivingThreadEndedTheWordTakesTheLastValueAtOnce) {
  FakeAgent agent(1, [&](int fd) {
    answer_next_request(fd);
    read_handover(fd);
    ::shutdown(fd, SHUT_RDWR);
  });
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven dev(link, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  std::vector<std::byte> buf(64);
  Work w;
  w.to_host(*r, 0, buf.data(), 64);
  const std::uint64_t v = dev.run(w);
  spin_until([&] { return link.receiver_ended(); });
  ASSERT_TRUE(link.receiver_ended());
  dev->stop(std::string("lost for a fault"));  // fault is ignored
  EXPECT_EQ(dev->signaled(), v);
}

TEST(Stop, OnceTheWordHoldsTheLastValueNothingOfTheProxyWritesItAgain) {
  std::promise<std::uint64_t> handed_on;
  auto handed_on_f = handed_on.get_future();
  FakeAgent agent(1, [&](int fd) {
    answer_next_request(fd);
    const std::uint64_t v = read_handover(fd);
    handed_on_f.wait();
    // Late reports of the stopped proxy: bytes of its copy and its done.
    std::vector<std::byte> payload(64, std::byte{0x77});
    send_msg(fd, wire::MsgType::kBytes, wire::Bytes{1, 0, v, 0, 64, 0}, payload);
    send_msg(fd, wire::MsgType::kDone, wire::Done{1, 0, v});
    drain(fd);
  });
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  alignas(8) static std::uint64_t word = 0;
  auto p = stopped_after_one_value(link, &word);
  ASSERT_TRUE(p);
  handed_on.set_value(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(std::atomic_ref<std::uint64_t>(word).load(std::memory_order_acquire), 0u);
  job->close();
}

TEST(Stop, ALateDoneOfAStoppedProxyIsDroppedAndTheJobLives) {
  std::promise<void> handed_on;
  auto handed_on_f = handed_on.get_future();
  FakeAgent agent(2, [&](int fd) {
    answer_next_request(fd);
    const std::uint64_t v = read_handover(fd);
    handed_on_f.wait();
    send_msg(fd, wire::MsgType::kDone, wire::Done{1, 0, v});  // late, alone
    answer_next_request(fd);  // answered only after the done was handled
    drain(fd);
  });
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  alignas(8) static std::uint64_t word = 0;
  std::atomic_ref<std::uint64_t>(word).store(0, std::memory_order_release);
  auto p = stopped_after_one_value(link, &word);
  ASSERT_TRUE(p);
  handed_on.set_value();
  Driven other(link, 2);
  ASSERT_TRUE(other->alloc(edge::Memory::kDevice, 64));  // the late done was handled before
  EXPECT_EQ(std::atomic_ref<std::uint64_t>(word).load(std::memory_order_acquire), 0u);
  EXPECT_FALSE(job->failed()) << job->fault_text();
  job->close();
}

TEST(Stop, StopRacingTheLastBytesLeavesTheWordAtTheLastValueWithTheBytesExact) {
  AgentProcess agent;
  for (int round = 0; round < 30; ++round) {
    auto job = remote::Job::create();
    remote::Link& link = job->connect(agent.endpoint());
    Driven dev(link, 1);
    auto r = dev->alloc(edge::Memory::kDevice, 1 << 16);
    ASSERT_TRUE(r);
    std::vector<std::byte> up(1 << 16, static_cast<std::byte>(round + 1)), down(1 << 16);
    Work w;
    w.to_device(up.data(), *r, 0, up.size()).to_host(*r, 0, down.data(), down.size());
    const std::uint64_t v = dev.run(w);
    if (round % 3 == 1) std::this_thread::sleep_for(std::chrono::microseconds(50 * round));
    dev.stop();  // races the bytes landing
    spin_until([&] { return dev->signaled() == v; });
    ASSERT_EQ(dev->signaled(), v) << "round " << round;
    ASSERT_EQ(up, down) << "round " << round;
  }
}

class StopReal : public AgentSuite {};

TEST_F(StopReal, WithNothingPendingTheWordTakesTheLastValueBeforeStopReturns) {
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 1 << 20);
  ASSERT_TRUE(r);
  std::uint64_t v = 0;
  for (int i = 0; i < 10; ++i) {
    Work w;
    w.between(*r, 0, *r, 0, 1 << 20);
    v = dev.run(w);
  }
  dev.stop();
  EXPECT_EQ(dev->signaled(), v);
}

TEST_F(StopReal, AProxyThatHandedNothingOverKeepsItsWord) {
  Driven dev(*link_, 1, 77);
  dev.stop();
  EXPECT_EQ(dev->signaled(), 77u);
}

}  // namespace
}  // namespace rig::test
