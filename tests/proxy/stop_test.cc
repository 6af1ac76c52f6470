// The page's stop (and DESIGN invariant 5), against a scripted agent that controls when the
// bytes of a pending copy land.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>

#include "link_core.h"
#include "fixture.h"
#include "test_hook.h"
#include "agent_process.h"
#include "raw_peer.h"

namespace rig::test {
namespace {

using harness::Driven;
using harness::Work;




void spin_until(const std::function<bool()>& cond) {
  for (int i = 0; i < 5000 && !cond(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Sets a promise once, and at the latest on the way out (a fake agent's script waits on it).
class Signal {
 public:
  std::shared_future<void> future() { return f_; }
  void operator()() {
    if (!done_) p_.set_value();
    done_ = true;
  }
  ~Signal() { (*this)(); }

 private:
  std::promise<void> p_;
  std::shared_future<void> f_ = p_.get_future().share();
  bool done_ = false;
};

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
  Signal stopped, seen;
  // Whether the agent may send the bytes: not when stop wrote the value while they were
  // pending (then stop released the copy's record, and the bytes could only land into it).
  std::atomic<bool> send_bytes{false};
  std::vector<std::byte> payload(256, std::byte{0x42});
  FakeAgent agent(2, [&, stopped_f = stopped.future(), seen_f = seen.future()](int fd) {
    answer_next_request(fd);
    const std::uint64_t v = read_handover(fd);
    stopped_f.wait();
    // acquire: pairs with the test's release store before it signals.
    if (!send_bytes.load(std::memory_order_acquire)) return drain(fd);
    send_msg(fd, wire::MsgType::kBytes, wire::Bytes{1, 0, v, 0, 256, 0}, payload);
    seen_f.wait();  // the word took v as the bytes landed, with no done report
    send_msg(fd, wire::MsgType::kDone, wire::Done{1, 0, v});  // the word passed it: dropped
    answer_next_request(fd);  // read only after the done
    drain(fd);
  });
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  std::vector<std::byte> buf(256);
  Driven dev(link, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 256);
  ASSERT_TRUE(r);
  Work w;
  w.to_host(*r, 0, buf.data(), 256);
  const std::uint64_t v = dev.run(w);
  dev.stop();
  const bool early = dev->signaled() != 0u;
  EXPECT_FALSE(early) << "the word took the last value while bytes could still land";
  send_bytes.store(!early, std::memory_order_release);
  stopped();
  if (early) return job->close();
  spin_until([&] { return dev->signaled() == v; });
  EXPECT_EQ(dev->signaled(), v) << "the word did not take the last value as the last bytes landed";
  EXPECT_EQ(buf, payload);
  seen();
  Driven other(link, 2);
  ASSERT_TRUE(other->alloc(edge::Memory::kDevice, 64));  // answered after the late done
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
  std::vector<std::byte> buf(64, std::byte{1});
  Driven dev(link, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
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
  std::vector<std::byte> buf(64);
  Driven dev(link, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  Work w;
  w.to_host(*r, 0, buf.data(), 64);
  const std::uint64_t v = dev.run(w);
  spin_until([&] { return remote::LinkCore::of(link).receiver_ended(); });
  ASSERT_TRUE(remote::LinkCore::of(link).receiver_ended());
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
    // Late reports of the stopped proxy: bytes of its copy (which match no pending copy: the
    // receiving thread fails the job for them) and its done.
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
  spin_until([&] { return job->failed(); });  // the receiving thread has handled the late bytes
  EXPECT_TRUE(job->failed());
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
    std::vector<std::byte> down(1 << 16);
    Driven dev(link, 1);
    auto r = dev->alloc(edge::Memory::kDevice, 1 << 16);
    ASSERT_TRUE(r);
    std::vector<std::byte> up(1 << 16, static_cast<std::byte>(round + 1));
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

// ---- Forced orders of the stop/receiver handshake ----
// test_hook.h (proxy/src) holds one side at a named point until the test lets it go, so each
// order is exercised every run; the tests wait on what they can observe (the word, a side held
// at its point), never on time. One ForcedOrder at a time (gtest runs tests one by one); its
// state is static, so a side still inside the hook after the test never reads freed memory.
using Point = remote::test_hook::Point;

struct OrderState {
  std::atomic<Point> point{Point::kStopStored};  // where a side is held (once)
  // acquire/release: pairs between the held thread and the test.
  std::atomic<bool> held{false};          // the side reached the point and is held there
  std::atomic<bool> go{false};            // the test lets it go
  std::atomic<bool> stop_waits{false};    // stop waited for the receiving thread (a turn of it)
  std::atomic<bool> stop_returned{false}; // the test's stop returned
  // Also hold the receiving thread where it claimed a stopped proxy's last write, until stop
  // waits for it or has returned; `claimed` says it got there.
  std::atomic<bool> hold_claim{false};
  std::atomic<bool> claimed{false};
};
OrderState g_order;

void order_hook(Point p, std::uint32_t device) {
  if (device != 1) return;
  if (p == Point::kStopWaitsForReceiver) g_order.stop_waits.store(true, std::memory_order_release);
  if (p == Point::kReceiverClaimedFinal && g_order.hold_claim.load(std::memory_order_acquire)) {
    g_order.claimed.store(true, std::memory_order_release);
    while (!g_order.stop_waits.load(std::memory_order_acquire) &&
           !g_order.stop_returned.load(std::memory_order_acquire)) {
      std::this_thread::yield();
    }
    return;
  }
  if (p != g_order.point.load(std::memory_order_acquire) ||
      g_order.held.exchange(true, std::memory_order_acq_rel)) {
    return;
  }
  for (;;) {
    if (g_order.go.load(std::memory_order_acquire)) return;
    // Held inside a done report, the receiving thread goes on once stop waits for it or has
    // returned without waiting: whichever comes, the test sees what the other side did.
    if (p == Point::kReceiverPublishing && (g_order.stop_waits.load(std::memory_order_acquire) ||
                                            g_order.stop_returned.load(std::memory_order_acquire))) {
      return;
    }
    std::this_thread::yield();
  }
}

class ForcedOrder {
 public:
  explicit ForcedOrder(Point p) {
    g_order.point.store(p, std::memory_order_relaxed);
    g_order.held.store(false, std::memory_order_relaxed);
    g_order.go.store(false, std::memory_order_relaxed);
    g_order.stop_waits.store(false, std::memory_order_relaxed);
    g_order.stop_returned.store(false, std::memory_order_relaxed);
    g_order.hold_claim.store(false, std::memory_order_relaxed);
    g_order.claimed.store(false, std::memory_order_relaxed);
    remote::test_hook::set(&order_hook);  // release: the stores above come first
  }
  ~ForcedOrder() {
    release();
    remote::test_hook::set(nullptr);
  }
  bool held() {
    spin_until([] { return g_order.held.load(std::memory_order_acquire); });
    return g_order.held.load(std::memory_order_acquire);
  }
  void release() { g_order.go.store(true, std::memory_order_release); }
};

// A thread running `f`, joined on every path out after the order lets every held side go.
class Beside {
 public:
  Beside(ForcedOrder& order, std::function<void()> f) : order_(order), t_(std::move(f)) {}
  ~Beside() { join(); }
  void join() {
    if (!t_.joinable()) return;
    order_.release();
    t_.join();
  }

 private:
  ForcedOrder& order_;
  std::thread t_;
};

// Submits value 1 of `p`: the one copy `c`. Whether it committed.
bool submit_value_one(remote::Proxy& p, const rig_copy& c) {
  rig_part part{};
  part.kind = RIG_PART_COPY;
  part.u.copy = c;
  rig_submission s{nullptr, 0, 1, &part};
  const char* why = nullptr;
  return rig_proxy_submit(p.c_handle(), &s, 1, &why) == RIG_COMMITTED;
}

// Makes the proxy of device 1 on `word` (set to 0 first) and submits its value 1: one copy of
// `bytes` from an object of it into `into`, or between its objects when `into` is null (then
// nothing lands here). Null on a failure.
std::unique_ptr<remote::Proxy> value_one(remote::Link& link, std::uint64_t& word, std::byte* into,
                                         std::uint64_t bytes) {
  word = 0;  // no proxy has it yet
  auto p = remote::device(link, *link.account(1), remote::abi::Device{1}).make(&word);
  auto r = p->alloc(edge::Memory::kDevice, bytes);
  if (!r) return nullptr;
  const rig_side dst = into != nullptr ? harness::host_side(into) : harness::region_side(*r, 0);
  if (!submit_value_one(*p, rig_copy{harness::region_side(*r, 0), dst, 1, bytes, bytes, bytes})) return nullptr;
  return p;
}

std::uint64_t load_word(std::uint64_t& w) {
  return std::atomic_ref<std::uint64_t>(w).load(std::memory_order_acquire);
}
void pass_word_on(std::uint64_t& w) {  // as the runtime does once it read the last value
  std::atomic_ref<std::uint64_t>(w).store(0, std::memory_order_release);
}

// A scripted agent: answers the make's request, reads value 1's handover and reports it done;
// then, if `answer_after`, answers the next request (read only after the report), and drains.
std::function<void(int)> reports_value_one_done(bool answer_after) {
  return [answer_after](int fd) {
    answer_next_request(fd);
    const std::uint64_t v = read_handover(fd);
    send_msg(fd, wire::MsgType::kDone, wire::Done{1, 0, v});
    if (answer_after) answer_next_request(fd);
    drain(fd);
  };
}

// The receiving thread has popped the last pending copy's record and not yet looked at the handshake
// when stop runs: stop finds no copy pending, so it writes the value itself, before it
// returns; the receiving thread, let go, finds the write claimed and writes nothing after.
TEST(StopOrder, TheLastBytesLandingJustBeforeStopLooksLeaveTheWriteToStopAndNoneToTheReceiver) {
  ForcedOrder order(Point::kReceiverPoppedCopy);
  std::vector<std::byte> payload(256, std::byte{0x5a});
  FakeAgent agent(2, [&](int fd) {
    answer_next_request(fd);  // alloc
    const std::uint64_t v = read_handover(fd);
    send_msg(fd, wire::MsgType::kBytes, wire::Bytes{1, 0, v, 0, 256, 0}, payload);
    answer_next_request(fd);  // read by the receiving thread only after the bytes
    drain(fd);
  });
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  alignas(8) static std::uint64_t word;
  std::vector<std::byte> buf(256);
  auto p = value_one(link, word, buf.data(), 256);
  ASSERT_TRUE(p);
  ASSERT_TRUE(order.held()) << "the receiving thread never popped the copy's record";
  p->stop(std::nullopt);
  EXPECT_EQ(load_word(word), 1u) << "stop found no copy pending but did not write the last value";
  EXPECT_EQ(buf, payload);
  pass_word_on(word);
  order.release();
  Driven other(link, 2);
  ASSERT_TRUE(other->alloc(edge::Memory::kDevice, 64));  // answered after the receiver went on
  EXPECT_EQ(load_word(word), 0u) << "the receiving thread wrote the word after stop had written it";
  EXPECT_FALSE(job->failed()) << job->fault_text();
  job->close();
}

// stop has marked the handshake stopped and not yet looked for pending copies when the last bytes land:
// the receiving thread, second to look, writes the value while stop is still held; stop, let
// go, finds the write claimed and writes nothing.
TEST(StopOrder, TheLastBytesLandingWhileStopIsBetweenItsFlagAndItsLookLeaveTheWriteToTheReceiver) {
  ForcedOrder order(Point::kStopStored);
  Signal send_bytes;
  std::vector<std::byte> payload(256, std::byte{0x6b});
  FakeAgent agent(2, [&, send = send_bytes.future()](int fd) {
    answer_next_request(fd);
    const std::uint64_t v = read_handover(fd);
    send.wait();
    send_msg(fd, wire::MsgType::kBytes, wire::Bytes{1, 0, v, 0, 256, 0}, payload);
    answer_next_request(fd);
    drain(fd);
  });
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  alignas(8) static std::uint64_t word;
  std::vector<std::byte> buf(256);
  auto p = value_one(link, word, buf.data(), 256);
  ASSERT_TRUE(p);
  Beside stopper(order, [&] { p->stop(std::nullopt); });
  ASSERT_TRUE(order.held()) << "stop never stored stopped";
  send_bytes();
  spin_until([&] { return load_word(word) == 1u; });
  ASSERT_EQ(load_word(word), 1u)
      << "the last bytes landed after stop began, and the receiving thread did not write the last value";
  EXPECT_EQ(buf, payload);
  stopper.join();
  EXPECT_EQ(load_word(word), 1u);
  pass_word_on(word);
  Driven other(link, 2);
  ASSERT_TRUE(other->alloc(edge::Memory::kDevice, 64));
  EXPECT_EQ(load_word(word), 0u) << "something wrote the word after it held the last value and stop returned";
  EXPECT_FALSE(job->failed()) << job->fault_text();
  job->close();
}

// The receiving thread is inside a done report of the proxy, about to publish it, when stop
// runs: stop waits for that report (a few instructions; it waits for no work) before it
// returns, so no write of the report lands after stop returned and the runtime passed the word
// on. The receiving thread is let go as soon as stop waits for it, or once stop returned.
TEST(StopOrder, AStopDuringADoneReportReturnsOnlyAfterItSoNoWriteLandsOnceTheWordIsPassedOn) {
  ForcedOrder order(Point::kReceiverPublishing);
  FakeAgent agent(2, reports_value_one_done(true));
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  alignas(8) static std::uint64_t word;
  auto p = value_one(link, word, nullptr, 64);
  ASSERT_TRUE(p);
  ASSERT_TRUE(order.held()) << "the receiving thread never handled the done report";
  std::atomic<std::uint64_t> at_return{~0ull};  // the word when stop returned (join orders it)
  Beside stopper(order, [&] {
    p->stop(std::nullopt);
    const std::uint64_t w = load_word(word);
    at_return.store(w, std::memory_order_relaxed);
    if (w == 1u) pass_word_on(word);  // the runtime read the last value: the word is its own
    g_order.stop_returned.store(true, std::memory_order_release);
  });
  // The receiving thread goes on once stop waits for it, or once stop returned without.
  spin_until([] { return g_order.stop_returned.load(std::memory_order_acquire); });
  ASSERT_TRUE(g_order.stop_returned.load(std::memory_order_acquire)) << "stop never returned";
  stopper.join();
  EXPECT_EQ(at_return.load(std::memory_order_relaxed), 1u);
  Driven other(link, 2);
  ASSERT_TRUE(other->alloc(edge::Memory::kDevice, 64));  // the done report is over
  EXPECT_EQ(load_word(word), 0u) << "the done report wrote the word after stop returned";
  EXPECT_FALSE(job->failed()) << job->fault_text();
  job->close();
}

// stop has marked the handshake stopped when the link's receiving thread ends (the agent went away) and
// claims the last value's write first: stop, let go, finds the write claimed, and waits for it
// before it returns, so the word holds the last value when stop returns and the runtime may free
// it (the thread no longer reads it). Before the fix stop returned at once while the receiving
// thread was still to write (ThreadSanitizer saw it read a word the runtime had freed).
TEST(StopOrder, TheReceiversEndBetweenStopsFlagAndItsLookWritesTheLastValueBeforeStopReturns) {
  ForcedOrder order(Point::kStopStored);
  g_order.hold_claim.store(true, std::memory_order_release);
  Signal go_away;
  FakeAgent agent(2, [&, away = go_away.future()](int fd) {
    answer_next_request(fd);
    read_handover(fd);
    away.wait();
    ::shutdown(fd, SHUT_RDWR);  // the link's receiving thread reads the end and ends
  });
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  alignas(8) static std::uint64_t word;
  auto p = value_one(link, word, nullptr, 64);  // nothing to land here: no copy pending
  ASSERT_TRUE(p);
  std::atomic<std::uint64_t> at_return{~0ull};  // the word when stop returned (join orders it)
  Beside stopper(order, [&] {
    p->stop(std::nullopt);
    at_return.store(load_word(word), std::memory_order_relaxed);
    g_order.stop_returned.store(true, std::memory_order_release);
  });
  ASSERT_TRUE(order.held()) << "stop never stored stopped";
  go_away();
  spin_until([] { return g_order.claimed.load(std::memory_order_acquire); });
  ASSERT_TRUE(g_order.claimed.load(std::memory_order_acquire)) << "the receiving thread never claimed the write";
  order.release();  // stop goes on: the write is claimed
  stopper.join();
  EXPECT_EQ(at_return.load(std::memory_order_relaxed), 1u)
      << "stop returned before the receiving thread, which had claimed the write, wrote the last value";
  EXPECT_EQ(load_word(word), 1u);
  EXPECT_TRUE(job->failed());  // the agent went away
}

// As AStopDuringADoneReport..., with a hold that reads and writes g_order's flags relaxed: they
// order nothing for ThreadSanitizer, so only the handshake's own orders do. The receiving
// thread read the values ring in the report; stop frees that ring once it sees the report left
// (leave's release, its wait's acquire). Weakening either is a race ThreadSanitizer reports on
// the freed ring.
void quiet_hook(Point p, std::uint32_t device) {
  constexpr auto relaxed = std::memory_order_relaxed;
  if (device != 1) return;
  if (p == Point::kStopWaitsForReceiver) g_order.stop_waits.store(true, relaxed);
  if (p != Point::kReceiverPublishing || g_order.held.exchange(true, relaxed)) return;
  while (!g_order.stop_waits.load(relaxed) && !g_order.stop_returned.load(relaxed)) {
    std::this_thread::yield();
  }
}

TEST(StopOrder, StopFreesTheValuesRingOnlyOnceTheDoneReportReadingItLeft) {
  g_order.held.store(false, std::memory_order_relaxed);
  g_order.stop_waits.store(false, std::memory_order_relaxed);
  g_order.stop_returned.store(false, std::memory_order_relaxed);
  remote::test_hook::Scoped hook(&quiet_hook);
  FakeAgent agent(2, reports_value_one_done(false));
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  alignas(8) static std::uint64_t word;
  auto p = value_one(link, word, nullptr, 64);
  ASSERT_TRUE(p);
  spin_until([] { return g_order.held.load(std::memory_order_relaxed); });
  ASSERT_TRUE(g_order.held.load(std::memory_order_relaxed)) << "the receiving thread never handled the done report";
  std::thread stopper([&] {
    p->stop(std::nullopt);
    g_order.stop_returned.store(true, std::memory_order_relaxed);
  });
  stopper.join();
  EXPECT_TRUE(g_order.stop_waits.load(std::memory_order_relaxed)) << "stop did not wait for the report";
  EXPECT_EQ(load_word(word), 1u);
  EXPECT_FALSE(job->failed()) << job->fault_text();
  job->close();
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
