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
#include "raw_peer.h"

namespace rig::test {
namespace {

using harness::Driven;
using harness::Work;

void answer_request(int fd) {
  RawFrame f;
  while (read_frame(fd, f)) {
    if (f.header.type == static_cast<std::uint16_t>(wire::MsgType::kRequest)) {
      wire::RequestView r;
      std::string why;
      if (!wire::decode(f.bytes(), r, why)) return;
      send_msg(fd, wire::MsgType::kAnswer, wire::Answer{r.fixed.id, 0, 0, 0, 0});
      return;
    }
  }
}

std::uint64_t next_handover(int fd) {
  RawFrame f;
  while (read_frame(fd, f)) {
    if (f.header.type == static_cast<std::uint16_t>(wire::MsgType::kHandover)) {
      wire::HandoverView h;
      std::string why;
      return wire::decode(f.bytes(), h, why) ? h.fixed.value : 0;
    }
  }
  return 0;
}

void drain(int fd) {
  RawFrame f;
  while (read_frame(fd, f)) {
  }
}

void spin_until(const std::function<bool()>& cond) {
  for (int i = 0; i < 5000 && !cond(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

TEST(Stop, WithACopyPendingTheWordTakesTheLastValueOnlyAsItsBytesLand) {
  std::promise<void> stopped;
  auto stopped_f = stopped.get_future();
  std::vector<std::byte> payload(256, std::byte{0x42});
  FakeAgent agent(1, [&](int fd) {
    answer_request(fd);
    const std::uint64_t v = next_handover(fd);
    stopped_f.wait();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    send_msg(fd, wire::MsgType::kBytes, wire::Bytes{1, 0, v, 0, 256, 0}, payload);
    send_msg(fd, wire::MsgType::kDone, wire::Done{1, 0, v});  // the word passed it: dropped
    drain(fd);
  });
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
  EXPECT_EQ(dev->signaled(), v);
  EXPECT_EQ(buf, payload);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(job->failed()) << job->fault_text();
  EXPECT_EQ(dev->signaled(), v);  // signaled keeps working after stop
  job->close();
}

TEST(Stop, WithACopyPendingTheWordTakesTheLastValueWhenTheReceivingThreadEnds) {
  std::promise<void> stopped;
  auto stopped_f = stopped.get_future();
  FakeAgent agent(1, [&](int fd) {
    answer_request(fd);
    next_handover(fd);
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
    answer_request(fd);
    next_handover(fd);
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
