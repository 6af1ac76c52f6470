// The page's sleep against each wake that can come between its look and its wait: a thread
// asleep on a proxy's word is held (proxy/src/test_hook.h, kSleepChecked) where it has found the
// word at `seen`, the job neither failed nor closing, and is about to wait; the test makes the
// wake (a done report, the agent's going away, the close), sees it done, then lets the sleeper
// go. Its wait must return for that wake. A sleep that missed it waits out its still_ms (20 s);
// the test wants it back within half of that, a margin no load of the machine explains.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include "fixture.h"
#include "rig/harness/runtime.h"
#include "link_core.h"
#include "raw_peer.h"
#include "test_hook.h"

namespace rig::test {
namespace {

using Clock = std::chrono::steady_clock;
using Point = remote::test_hook::Point;
constexpr std::uint64_t kStillMs = 20000;

struct SleepHold {
  // acquire/release: between the held sleeper and the test.
  std::atomic<bool> held{false};
  std::atomic<bool> go{false};
};
SleepHold g_hold;  // static: a sleeper still inside the hook never reads freed memory

void hold_sleeper(Point p, std::uint32_t device) {
  if (p != Point::kSleepChecked || device != 1 || g_hold.held.exchange(true, std::memory_order_acq_rel)) return;
  while (!g_hold.go.load(std::memory_order_acquire)) std::this_thread::yield();
}

bool eventually(const std::function<bool()>& cond) {
  const auto until = Clock::now() + std::chrono::seconds(30);
  while (!cond() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return cond();
}

enum class Wake { kReport, kAgentGone, kClose };

// A proxy of device 1 with value 1 handed over to a scripted agent, which reports it done or
// goes away when told; a sleeper on its word, held before its wait; the wake; the sleeper let go.
class SleepOrder : public ::testing::TestWithParam<Wake> {
 protected:
  struct Outcome {
    std::optional<std::string> fault;  // the Fault's text, if sleep raised
    Clock::time_point at;
  };

  void SetUp() override {
    g_hold.held.store(false, std::memory_order_relaxed);
    g_hold.go.store(false, std::memory_order_relaxed);
    remote::test_hook::set(&hold_sleeper);  // release: the stores above come first
  }
  void TearDown() override {
    g_hold.go.store(true, std::memory_order_release);
    remote::test_hook::set(nullptr);
  }

  // Joins the sleeper before what it uses goes, on every path out: a sleeper that missed its
  // wake is let go and the job closed (it ends by the close, or by its still_ms).
  struct Joined {
    std::thread& t;
    remote::Job& job;
    ~Joined() {
      g_hold.go.store(true, std::memory_order_release);
      if (!t.joinable()) return;
      job.close();
      t.join();
    }
  };

  std::shared_ptr<remote::Job> job_;
};

TEST_P(SleepOrder, AWakeBetweenTheSleepersCheckAndItsWaitEndsTheWait) {
  std::promise<Wake> told;
  FakeAgent agent(2, [wake = told.get_future().share()](int fd) {
    answer_next_request(fd);
    const std::uint64_t v = read_handover(fd);
    const Wake w = wake.get();
    if (w == Wake::kReport) send_msg(fd, wire::MsgType::kDone, wire::Done{1, 0, v});
    if (w == Wake::kAgentGone) ::shutdown(fd, SHUT_RDWR);
    drain(fd);
  });
  job_ = remote::Job::create();
  remote::Link& link = job_->connect(agent.endpoint());
  harness::Driven dev(link, 1);
  auto r = dev->alloc(edge::Memory::kDevice, 64);
  ASSERT_TRUE(r);
  harness::Work w;
  w.between(*r, 0, *r, 0, 64);
  ASSERT_EQ(dev.run(w), 1u);
  remote::Proxy* const p = &dev.proxy();

  std::promise<Outcome> outcome;
  std::thread sleeper([p, &outcome] {
    Outcome o;
    try {
      p->sleep(0, kStillMs);
    } catch (const edge::Fault& e) {
      o.fault = e.what();
    }
    o.at = Clock::now();
    outcome.set_value(o);
  });
  Joined joined{sleeper, *job_};
  ASSERT_TRUE(eventually([] { return g_hold.held.load(std::memory_order_acquire); }))
      << "the sleeper never reached its wait";
  told.set_value(GetParam());
  if (GetParam() == Wake::kClose) job_->close();
  // The wake is done, and nothing wakes the sleeper after it: the word moved, or the receiving
  // thread ended (its end is the last notify of a failed or closed link).
  ASSERT_TRUE(eventually([&] {
    return GetParam() == Wake::kReport ? p->signaled() == 1u
                                       : remote::LinkCore::of(link).receiver_ended();
  }));
  const Clock::time_point let_go = Clock::now();
  g_hold.go.store(true, std::memory_order_release);
  auto done = outcome.get_future();
  ASSERT_EQ(done.wait_for(std::chrono::milliseconds(kStillMs / 2)), std::future_status::ready)
      << "the sleeper missed its wake and waits out its still_ms";
  const Outcome o = done.get();
  sleeper.join();
  EXPECT_LT(o.at - let_go, std::chrono::milliseconds(kStillMs / 2));
  if (GetParam() == Wake::kAgentGone) {
    EXPECT_TRUE(o.fault.has_value()) << "sleep returned for a failed job instead of raising Fault";
  } else {
    EXPECT_FALSE(o.fault.has_value()) << *o.fault;  // a report returns; a close raises no Fault
  }
  if (GetParam() != Wake::kClose) job_->close();
}

INSTANTIATE_TEST_SUITE_P(Wakes, SleepOrder,
                         ::testing::Values(Wake::kReport, Wake::kAgentGone, Wake::kClose),
                         [](const auto& info) {
                           switch (info.param) {
                             case Wake::kReport: return std::string("ADoneReport");
                             case Wake::kAgentGone: return std::string("TheAgentGoingAway");
                             case Wake::kClose: return std::string("TheClose");
                           }
                           return std::string("?");
                         });

}  // namespace
}  // namespace rig::test
