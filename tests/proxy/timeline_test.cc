// The page's Timeline section: signaled, sleep, and the word's invariants (1: it never
// decreases, and holds v only after every byte of values <= v has landed).
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "link_core.h"
#include "fixture.h"
#include "raw_peer.h"
#include "test_hook.h"

namespace rig::test {
namespace {

class Timeline : public AgentSuite {};

TEST_F(Timeline, SignaledReadsTheWord) {
  Driven dev(*link_, 1, 41);
  EXPECT_EQ(dev->signaled(), 41u);
}

TEST_F(Timeline, SleepReturnsAtOnceWhenTheWordDiffersFromSeen) {
  Driven dev(*link_, 1, 5);
  const auto t0 = std::chrono::steady_clock::now();
  dev->sleep(4, 10000);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

// Runs sleep on a thread of its own; the future tells whether it raised.
std::future<bool> sleep_async(remote::Proxy& p, std::uint64_t seen, std::uint64_t still_ms) {
  return std::async(std::launch::async, [&p, seen, still_ms] {
    try {
      p.sleep(seen, still_ms);
      return false;
    } catch (const edge::Fault&) {
      return true;
    }
  });
}

// Whatever fails, sleepers end before their futures are destroyed: their words move.
struct WakeOnExit {
  std::vector<Driven*> devices;
  remote::Link& link;
  ~WakeOnExit() {
    for (Driven* d : devices) std::atomic_ref<std::uint64_t>(*d->word()).store(1, std::memory_order_release);
    remote::LinkCore::of(link).notify_all();
  }
};

TEST_F(Timeline, SleepReturnsByStillMsWhenNothingMoves) {
  Driven dev(*link_, 1);
  const auto t0 = std::chrono::steady_clock::now();
  auto slept = sleep_async(dev.proxy(), 0, 200);
  WakeOnExit wake{{&dev}, *link_};
  // Generous (a loaded machine) but meaningful: a sleep that ignores still_ms misses it.
  ASSERT_EQ(slept.wait_for(std::chrono::seconds(3)), std::future_status::ready);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_FALSE(slept.get());
  EXPECT_GE(took, std::chrono::milliseconds(200));
}

TEST_F(Timeline, SleepWithTheLargestStillMsWaitsAndTheCloseWakesEverySleeperWithoutFault) {
  RIG_NEED_DEVICES(*link_, 2);
  Driven a(*link_, 1), b(*link_, 2);
  auto forever = sleep_async(a.proxy(), 0, UINT64_MAX);  // no overflow: it waits
  auto hour = sleep_async(b.proxy(), 0, 3600'000);
  WakeOnExit wake{{&a, &b}, *link_};
  EXPECT_EQ(forever.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  EXPECT_EQ(hour.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  job_->close();
  ASSERT_EQ(forever.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  ASSERT_EQ(hour.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_FALSE(forever.get()) << "a close raised Fault in sleep";
  EXPECT_FALSE(hour.get()) << "a close raised Fault in sleep";
}

TEST_F(Timeline, ASleepThatBeginsAfterTheCloseReturnsByItsStillMs) {
  Driven dev(*link_, 1);
  job_->close();
  auto slept = sleep_async(dev.proxy(), 0, 100);
  WakeOnExit wake{{&dev}, *link_};
  ASSERT_EQ(slept.wait_for(std::chrono::seconds(3)), std::future_status::ready);
  EXPECT_FALSE(slept.get());
}

TEST_F(Timeline, AfterFailureSleepRaisesEvenWhenTheWordDiffersFromSeen) {
  Driven dev(*link_, 1, 5);
  job_->fail("root cause");
  try {
    dev->sleep(4, 1000);
    FAIL() << "sleep returned on a word that differs, after the job failed";
  } catch (const edge::Fault& f) {
    EXPECT_STREQ(f.what(), "root cause");
  }
  EXPECT_EQ(dev->signaled(), 5u);  // signaled still shows the word
}

// A fake agent reports done v2, then done v1, then answers a request: once that answer is in,
// the receiving thread has handled both reports (one connection, in order).
TEST(TimelineFake, ADoneBelowTheWordIsDroppedAndTheWordNeverDecreases) {
  FakeAgent agent(1, [](int fd) {
    answer_next_request(fd);
    const std::uint64_t v1 = read_handover(fd), v2 = read_handover(fd);
    send_msg(fd, wire::MsgType::kDone, wire::Done{1, 0, v2});
    // A frame of another kind ends the run of reports, so the next one is published alone.
    send_msg(fd, wire::MsgType::kPing, wire::Ping{7});
    send_msg(fd, wire::MsgType::kDone, wire::Done{1, 0, v1});  // below the word
    answer_next_request(fd);
    drain(fd);
  });
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven dev(link, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  Work w;
  w.between(*r, 0, *r, 0, 64);
  dev.run(w);
  const std::uint64_t v2 = dev.run(w);
  ASSERT_TRUE(dev->alloc(edge::Memory::kDevice, 64));  // answered after both reports
  EXPECT_EQ(dev->signaled(), v2);
  EXPECT_FALSE(job->failed()) << job->fault_text();
  job->close();
}

// Frames written in one go, so that the receiving thread finds them all in one read.
class Together {
 public:
  template <class M>
  Together& add(wire::MsgType type, const M& msg, std::span<const std::byte> tail = {}) {
    append_msg(out_, type, msg, tail);
    return *this;
  }
  Together& done(std::uint32_t device, std::uint64_t value) {
    return add(wire::MsgType::kDone, wire::Done{device, 0, value});
  }
  // A frame header as given (a malformed one, for a test of what a violation ends).
  Together& header(const wire::FrameHeader& h) {
    const auto* p = reinterpret_cast<const std::byte*>(&h);
    out_.insert(out_.end(), p, p + sizeof h);
    return *this;
  }
  void write(int fd) const { write_all(fd, out_.data(), out_.size()); }

 private:
  std::vector<std::byte> out_;
};

// Allocates 64 bytes on dev's device and runs one copy within them; returns its value.
std::uint64_t run_copy_within(Driven& dev) {
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  if (!r) throw std::runtime_error("alloc of 64 bytes failed");
  Work w;
  w.between(*r, 0, *r, 0, 64);
  return dev.run(w);
}

std::uint64_t word_publishes(remote::Link& link) {
  return link.counters().word_publishes;
}

TEST(TimelineFake, DoneReportsOfOneWordThatComeTogetherRaiseItOnceToTheHighest) {
  // Each value copies 8 bytes into this process: its bytes, then its report, as the agent
  // sends them; eight values' frames in one write.
  constexpr int kValues = 8;
  FakeAgent agent(1, [](int fd) {
    answer_next_request(fd);
    std::vector<std::uint64_t> values;
    for (int i = 0; i < kValues; ++i) values.push_back(read_handover(fd));
    Together t;
    for (int i = 0; i < kValues; ++i) {
      std::array<std::byte, 8> payload;
      payload.fill(std::byte(i + 1));
      t.add(wire::MsgType::kBytes, wire::Bytes{1, 0, values[i], 0, 8, 0}, payload).done(1, values[i]);
    }
    t.write(fd);
    drain(fd);
  });
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  std::array<std::byte, 8 * kValues> here{};
  Driven dev(link, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  std::uint64_t last = 0;
  for (int i = 0; i < kValues; ++i) {
    Work w;
    w.to_host(*r, 0, here.data() + 8 * i, 8);
    last = dev.run(w);
  }
  // No report waits behind the receiving thread's next read: the word moves with nothing after.
  dev.wait(last, 10000);
  EXPECT_EQ(dev->signaled(), last);
  for (int i = 0; i < kValues * 8; ++i) ASSERT_EQ(here[i], std::byte(i / 8 + 1)) << "byte " << i;
  EXPECT_EQ(word_publishes(link), 1u) << "one raise of the word (one release store, one wake) per run of reports";
  EXPECT_FALSE(job->failed()) << job->fault_text();
  job->close();
}

TEST(TimelineFake, AnAnswerThatCameAfterADoneReportFindsTheWordRaised) {
  // The report and the answer arrive in one read. The receiving thread dawdles before each
  // raise of the word, so an answer handed over before the raise would be seen first.
  struct Dawdle {
    Dawdle() {
      remote::test_hook::set([](remote::test_hook::Point p, std::uint32_t) {
        if (p == remote::test_hook::Point::kReceiverPublishing) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      });
    }
    ~Dawdle() { remote::test_hook::set(nullptr); }
  } dawdle;
  FakeAgent agent(1, [](int fd) {
    answer_next_request(fd);
    const std::uint64_t v = read_handover(fd);
    const std::uint64_t id = read_request(fd);
    Together().done(1, v).add(wire::MsgType::kAnswer, wire::Answer{id, 0, 0, 0, 0}).write(fd);
    drain(fd);
  });
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven dev(link, 1);
  const std::uint64_t v = run_copy_within(dev);
  ASSERT_TRUE(dev->alloc(edge::Memory::kDevice, 64));
  EXPECT_EQ(dev->signaled(), v) << "the answer was handed over before the report ahead of it was published";
  EXPECT_FALSE(job->failed()) << job->fault_text();
  job->close();
}

TEST(TimelineFake, DoneReportsOfTwoWordsInterleavedAreEachPublishedInTheirTurn) {
  FakeAgent agent(2, [](int fd) {
    answer_next_request(fd);
    answer_next_request(fd);
    const std::uint64_t a1 = read_handover(fd), b1 = read_handover(fd), a2 = read_handover(fd);
    Together().done(1, a1).done(2, b1).done(1, a2).write(fd);
    drain(fd);
  });
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven a(link, 1), b(link, 2);
  auto ra = a->alloc(edge::Memory::kDevice, 64);
  auto rb = b->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(ra && rb);
  Work wa, wb;
  wa.between(*ra, 0, *ra, 0, 64);
  wb.between(*rb, 0, *rb, 0, 64);
  a.run(wa);
  const std::uint64_t b1 = b.run(wb), a2 = a.run(wa);
  a.wait(a2, 10000);
  b.wait(b1, 10000);
  EXPECT_EQ(a->signaled(), a2);
  EXPECT_EQ(b->signaled(), b1);
  // A report of another word between two of one word ends the run: merging across it would
  // make a value visible before a value of the other word reported ahead of it.
  EXPECT_EQ(word_publishes(link), 3u);
  EXPECT_FALSE(job->failed()) << job->fault_text();
  job->close();
}

// A done report, then in the same read a frame whose header breaks the protocol: the job fails
// with the reason, and the report, checked before the violation, stands (the word holds it).
TEST(TimelineFake, AReportThatCameBeforeAProtocolViolationStands) {
  FakeAgent agent(1, [](int fd) {
    answer_next_request(fd);
    const std::uint64_t v = read_handover(fd);
    Together().done(1, v).header(wire::FrameHeader{8, 0, 0}).write(fd);
    drain(fd);
  });
  auto job = remote::Job::create();
  remote::Link& link = job->connect(agent.endpoint());
  Driven dev(link, 1);
  const std::uint64_t v = run_copy_within(dev);
  for (int i = 0; i < 10'000'000 && !job->failed(); ++i) std::this_thread::yield();
  ASSERT_TRUE(job->failed()) << "a frame of unknown type did not fail the job";
  EXPECT_NE(job->fault_text().find("unknown type"), std::string::npos) << job->fault_text();
  EXPECT_EQ(dev->signaled(), v) << "the report that came before the violation was lost";
}

// Device 2's word as the receiving thread read it where it claimed device 1's last write (the
// hook below), ~0 until then.
std::atomic<const std::uint64_t*> g_other_word{nullptr};
std::atomic<std::uint64_t> g_other_seen{~std::uint64_t{0}};
void record_other_word(remote::test_hook::Point p, std::uint32_t device) {
  if (p != remote::test_hook::Point::kReceiverClaimedFinal || device != 1) return;
  // acquire: pairs with the test's release store of the pointer.
  if (const std::uint64_t* w = g_other_word.load(std::memory_order_acquire)) {
    // acquire: the word as any reader of it sees it; release: pairs with the test's acquire.
    g_other_seen.store(std::atomic_ref<const std::uint64_t>(*w).load(std::memory_order_acquire),
                       std::memory_order_release);
  }
}

// What a test of a stopped proxy's last write saw: device 2's value b, device 1's last value a,
// device 1's word once written, device 2's word where the receiving thread claimed that write,
// and the first byte of device 1's copy into this process.
struct LastWrite {
  std::uint64_t b = 0, a = 0, word1 = 0, other_seen = 0;
  std::byte landed{};
};

// Submits b on device 2 (a copy between its own memory), then a on device 1 (8 bytes into this
// process), and stops device 1 with that copy pending, so the receiving thread writes its last
// value; sets `stopped` once stop returned (the agent's script waits for it). Returns once device
// 1's word holds a (or after ten million looks) and device 2's word holds b.
LastWrite stop_one_with_a_copy_pending(remote::Link& link, std::atomic<bool>& stopped) {
  LastWrite seen;
  std::array<std::byte, 8> here{};
  Driven one(link, 1), two(link, 2);
  auto r1 = one->alloc(edge::Memory::kDevice, 64);
  auto r2 = two->alloc(edge::Memory::kDevice, 64);
  if (!r1 || !r2) throw std::runtime_error("the fake agent refused an alloc");
  Work w2, w1;
  w2.between(*r2, 0, *r2, 0, 64);
  w1.to_host(*r1, 0, here.data(), here.size());
  seen.b = two.run(w2);
  seen.a = one.run(w1);
  g_other_seen.store(~std::uint64_t{0}, std::memory_order_relaxed);
  g_other_word.store(two.word(), std::memory_order_release);  // pairs with the hook's acquire
  remote::test_hook::set(&record_other_word);
  one.stop();  // the copy is pending: the receiving thread writes the last value
  stopped.store(true, std::memory_order_release);  // pairs with the script's acquire
  // acquire: the receiving thread's release store of the last value.
  std::atomic_ref<const std::uint64_t> word1(*one.word());
  for (int i = 0; i < 10'000'000 && word1.load(std::memory_order_acquire) != seen.a; ++i) std::this_thread::yield();
  remote::test_hook::set(nullptr);
  seen.word1 = word1.load(std::memory_order_acquire);
  seen.landed = here[0];
  // acquire: pairs with the hook's release store.
  seen.other_seen = g_other_seen.load(std::memory_order_acquire);
  g_other_word.store(nullptr, std::memory_order_release);
  two.wait(seen.b, 10000);
  return seen;
}

// Device 1 is stopped with a copy into this process pending; then, in one read, the receiving
// thread finds device 2's done report, the copy's bytes and device 1's report. The bytes let it
// write device 1's last value, and the report of device 2 came before them: it is published
// first, so whoever sees device 1's last value sees device 2's too (reports of different words
// keep the stream's order, also across a stopped proxy's last write).
TEST(TimelineFake, AStoppedProxysLastWriteComesAfterAnotherWordsReportThatCameBeforeItsBytes) {
  std::atomic<bool> stopped{false};
  FakeAgent agent(2, [&stopped](int fd) {
    answer_next_request(fd);
    answer_next_request(fd);
    const std::uint64_t b = read_handover(fd), a = read_handover(fd);
    // acquire: pairs with the test's release store after its stop returned.
    while (!stopped.load(std::memory_order_acquire)) std::this_thread::yield();
    std::array<std::byte, 8> payload;
    payload.fill(std::byte{0x5a});
    Together().done(2, b).add(wire::MsgType::kBytes, wire::Bytes{1, 0, a, 0, 8, 0}, payload).done(1, a).write(fd);
    drain(fd);
  });
  auto job = remote::Job::create();
  const LastWrite seen = stop_one_with_a_copy_pending(job->connect(agent.endpoint()), stopped);
  ASSERT_EQ(seen.word1, seen.a) << "the stopped proxy's last value was never written";
  EXPECT_EQ(seen.landed, std::byte{0x5a});
  EXPECT_EQ(seen.other_seen, seen.b)
      << "device 1's last value was written before device 2's report that came ahead of its bytes";
  EXPECT_FALSE(job->failed()) << job->fault_text();
  job->close();
}

// As above, but the copy's bytes never come: in one read, device 2's done report and a frame
// that breaks the protocol. The receiving thread ends there and writes device 1's last value:
// device 2's report, which came before the end, is published first (the end keeps the stream's
// order too).
TEST(TimelineFake, AReportThatCameBeforeTheLinksEndIsPublishedBeforeAStoppedProxysLastWrite) {
  std::atomic<bool> stopped{false};
  FakeAgent agent(2, [&stopped](int fd) {
    answer_next_request(fd);
    answer_next_request(fd);
    const std::uint64_t b = read_handover(fd);
    read_handover(fd);
    // acquire: pairs with the test's release store after its stop returned.
    while (!stopped.load(std::memory_order_acquire)) std::this_thread::yield();
    Together().done(2, b).header(wire::FrameHeader{8, 0, 0}).write(fd);
    drain(fd);
  });
  auto job = remote::Job::create();
  const LastWrite seen = stop_one_with_a_copy_pending(job->connect(agent.endpoint()), stopped);
  ASSERT_EQ(seen.word1, seen.a) << "the stopped proxy's last value was never written";
  EXPECT_EQ(seen.other_seen, seen.b)
      << "device 1's last value was written before device 2's report that came ahead of the link's end";
  ASSERT_TRUE(job->failed()) << "a frame of unknown type did not fail the job";
  EXPECT_NE(job->fault_text().find("unknown type"), std::string::npos) << job->fault_text();
}

TEST_F(Timeline, SleepWakesWhenTheWordMoves) {
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  Work w;
  w.between(*r, 0, *r, 0, 64);
  const auto t0 = std::chrono::steady_clock::now();
  const std::uint64_t v = dev.run(w);
  while (dev->signaled() < v) dev->sleep(dev->signaled(), 120000);
  EXPECT_EQ(dev->signaled(), v);
  // It returned on the word's change, not on still_ms.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
}

TEST_F(Timeline, SleepRaisesFaultOnceTheJobFailedBeforeOrMeanwhileAndAgainAfter) {
  Driven dev(*link_, 1);
  std::thread failer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    job_->fail("failed meanwhile");
  });
  EXPECT_THROW(dev->sleep(0, 10000), edge::Fault);  // meanwhile
  failer.join();
  try {
    dev->sleep(0, 10000);  // before: the same fault again
    FAIL();
  } catch (const edge::Fault& f) {
    EXPECT_STREQ(f.what(), "failed meanwhile");
  }
}

TEST_F(Timeline, AReaderThatSeesVSeesEveryByteOfValuesUpToV) {
  // Many values, each copying a distinct pattern into its own slice; a reader thread loads the
  // word with acquire and checks every slice of every value it covers.
  constexpr std::size_t kValues = 200, kSlice = 4096;
  std::vector<std::byte> down(kValues * kSlice, std::byte{0});
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, kValues * kSlice);
  ASSERT_TRUE(r);
  std::vector<std::byte> up(kValues * kSlice);
  for (std::size_t i = 0; i < up.size(); ++i) up[i] = static_cast<std::byte>((i / kSlice) + 1);
  Work fill;
  fill.to_device(up.data(), *r, 0, up.size());
  const std::uint64_t base = dev.run(fill);
  std::atomic<bool> stop{false}, started{false};
  std::atomic<std::uint64_t> checks{0};
  std::thread reader([&] {
    started.store(true, std::memory_order_release);
    while (!stop.load(std::memory_order_acquire)) {
      const std::uint64_t seen = dev->signaled();
      const std::uint64_t covered = seen > base ? seen - base : 0;
      for (std::size_t s = 0; s < covered; ++s) {
        ASSERT_EQ(down[s * kSlice + kSlice - 1], static_cast<std::byte>(s + 1)) << "value " << base + s + 1;
      }
      checks.fetch_add(1, std::memory_order_relaxed);
    }
  });
  while (!started.load(std::memory_order_acquire)) std::this_thread::yield();
  std::uint64_t last = 0;
  for (std::size_t s = 0; s < kValues; ++s) {
    Work w;
    w.to_host(*r, s * kSlice, down.data() + s * kSlice, kSlice);
    last = dev.run(w);
  }
  dev.wait(last);
  stop.store(true, std::memory_order_release);
  reader.join();
  EXPECT_EQ(up, down);
  EXPECT_GT(checks.load(), 0u);
}

TEST_F(Timeline, TheWordNeverDecreases) {
  Driven dev(*link_, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  std::atomic<bool> stop{false};
  std::thread watcher([&] {
    std::uint64_t prev = 0;
    while (!stop.load(std::memory_order_acquire)) {
      const std::uint64_t now = dev->signaled();
      ASSERT_GE(now, prev);
      prev = now;
    }
  });
  std::uint64_t last = 0;
  for (int i = 0; i < 2000; ++i) {
    Work w;
    w.between(*r, 0, *r, 0, 64);
    last = dev.run(w);
  }
  dev.wait(last);
  stop.store(true, std::memory_order_release);
  watcher.join();
}

}  // namespace
}  // namespace rig::test
