// The reader's wake (FrameReader::set_wake): an owner whose work completes while the reader
// waits for the peer (a GPU's stream on the agent) arms an eventfd before each wait, and its
// write ends the wait at once and runs the idle watch, instead of the watch's next tick.
#include <sys/eventfd.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "rig/engine/counters.h"
#include "rig/engine/frame_reader.h"
#include "rig/engine/iov_cursor.h"
#include "rig/engine/plain_socket.h"
#include "rig/wire/codec.h"
#include "rig/wire/messages.h"
#include "socket_pair.h"

namespace rig::engine {
namespace {

struct EventFd {
  int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ~EventFd() { ::close(fd); }
  void post() const {
    const std::uint64_t one = 1;
    ASSERT_EQ(::write(fd, &one, sizeof one), static_cast<ssize_t>(sizeof one));
  }
};

// Waits (up to 10 s) until `held()`.
template <class Held>
bool eventually(Held held) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!held() && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(std::chrono::microseconds(200));
  return held();
}

// reader.next() on a thread of its own, from construction; join() waits for its end.
struct Reading {
  explicit Reading(FrameReader& reader) : thread([this, &reader] { rc = reader.next(h).err(); }) {}
  int join() {
    thread.join();
    return rc;
  }
  wire::FrameHeader h{};
  int rc = 0;
  std::thread thread;  // last: starts once the others exist
};

// The idle watch's interval: far longer than a passing run takes, so only a wake can have ended
// a wait early (a reader that ignores the wake runs on_idle after it, with this silence).
constexpr int kIntervalMs = 3000;

// A reader on one end of a loopback pair, its wake, and counts of its calls (relaxed: counts
// read while the reader runs, nothing published through them).
class WakeTest : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    pair_ = connected(GetParam());
    reader_ = std::make_unique<FrameReader>(*pair_.b, counters_);
  }
  bool armed_once() {
    return eventually([&] { return arms_.load(std::memory_order_relaxed) >= 1; });
  }

  Pair pair_;
  Counters counters_;
  std::unique_ptr<FrameReader> reader_;
  EventFd wake_;
  std::atomic<int> arms_{0}, idles_{0};
};

TEST_P(WakeTest, AWakeEndsTheWaitAtOnceAndRunsTheIdleWatchWithoutAdvancingItsClock) {
  std::atomic<std::int64_t> silent{-1};  // relaxed: read after join(), which orders it
  reader_->set_idle_watch(kIntervalMs, [&](std::int64_t s) {
    silent.store(s, std::memory_order_relaxed);
    return -ECANCELED;  // ends the read: the wake was acted on
  });
  reader_->set_wake(wake_.fd, [&] {
    arms_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  });
  Reading reading(*reader_);
  EXPECT_TRUE(armed_once());  // about to wait
  wake_.post();
  EXPECT_EQ(reading.join(), -ECANCELED);
  EXPECT_EQ(silent.load(std::memory_order_relaxed), 0) << "the idle watch ran on its tick, not on the wake";
  EXPECT_EQ(arms_.load(std::memory_order_relaxed), 1);
}

TEST_P(WakeTest, TheOwnerArmsAgainBeforeEveryWaitAndItsErrorEndsTheRead) {
  reader_->set_idle_watch(kIntervalMs, [&](std::int64_t silent) {
    idles_.fetch_add(1, std::memory_order_relaxed);
    return silent == 0 ? 0 : -ETIMEDOUT;  // after the wake the wait goes on; a tick ends it
  });
  reader_->set_wake(wake_.fd, [&] { return arms_.fetch_add(1, std::memory_order_relaxed) == 0 ? 0 : -EIO; });
  Reading reading(*reader_);
  EXPECT_TRUE(armed_once());
  wake_.post();  // on_idle runs, the wait goes on: armed again, which fails
  EXPECT_EQ(reading.join(), -EIO);
  EXPECT_EQ(idles_.load(std::memory_order_relaxed), 1);
  EXPECT_EQ(arms_.load(std::memory_order_relaxed), 2);
}

TEST_P(WakeTest, BytesEndTheWaitAsBeforeWithNoWakeNeeded) {
  reader_->set_idle_watch(kIntervalMs, [&](std::int64_t) {
    idles_.fetch_add(1, std::memory_order_relaxed);
    return -ETIMEDOUT;  // the bytes did not end the wait
  });
  reader_->set_wake(wake_.fd, [&] {
    arms_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  });
  Reading reading(*reader_);
  EXPECT_TRUE(armed_once());
  const auto ping = wire::frame(wire::MsgType::kPing, wire::Ping{7});
  const iovec iov = to_iov(&ping, sizeof ping);
  EXPECT_EQ(pair_.a->send_all({&iov, 1}), 0);
  EXPECT_EQ(reading.join(), 0);
  EXPECT_EQ(reading.h.type, static_cast<std::uint16_t>(wire::MsgType::kPing));
  EXPECT_EQ(idles_.load(std::memory_order_relaxed), 0);
}

TEST_P(WakeTest, AWakeThatCameWithPartOfAFrameEndsTheWaitForTheRest) {
  std::atomic<std::int64_t> silent{-1};  // relaxed: read after join(), which orders it
  reader_->set_idle_watch(kIntervalMs, [&](std::int64_t s) {
    silent.store(s, std::memory_order_relaxed);
    return -ECANCELED;  // ends the read: the wake was acted on
  });
  const auto ping = wire::frame(wire::MsgType::kPing, wire::Ping{7});
  reader_->set_wake(wake_.fd, [&] {
    if (arms_.fetch_add(1, std::memory_order_relaxed) == 0) {
      // The work completes and, before the wait, 4 bytes of a frame come: both are there when
      // the reader waits.
      wake_.post();
      EXPECT_EQ(::send(pair_.a->fd(), &ping, 4, 0), 4);
      EXPECT_EQ(poll_readable(pair_.b->fd(), 10000), 0);
    }
    return 0;
  });
  Reading reading(*reader_);
  EXPECT_EQ(reading.join(), -ECANCELED);
  EXPECT_EQ(silent.load(std::memory_order_relaxed), 0) << "the wake waited for the idle watch's tick";
  EXPECT_EQ(arms_.load(std::memory_order_relaxed), 2);  // the bytes' wait, then the rest's
}

TEST(PollReadableOrEvent, AnEventIsReadAwaySoTheNextWaitDoesNotEndOnIt) {
  Pair p = connected(Backend::kPlain);
  EventFd wake;
  EXPECT_EQ(poll_readable_or_event(p.b->fd(), wake.fd, 0), -ETIME);
  wake.post();
  wake.post();
  EXPECT_EQ(poll_readable_or_event(p.b->fd(), wake.fd, 0), 1);
  EXPECT_EQ(poll_readable_or_event(p.b->fd(), wake.fd, 0), -ETIME) << "the event's count was left behind";
  const char byte = 'x';
  ASSERT_EQ(::send(p.a->fd(), &byte, 1, 0), 1);
  EXPECT_EQ(poll_readable_or_event(p.b->fd(), wake.fd, 1000), 0);
  wake.post();
  EXPECT_EQ(poll_readable_or_event(p.b->fd(), wake.fd, 0), 0) << "bytes come first";
  EXPECT_EQ(poll_readable_or_event(-1, wake.fd, 0), 1) << "the event was lost with the bytes";
}

INSTANTIATE_TEST_SUITE_P(Backends, WakeTest, kBackends, backend_test_name);

}  // namespace
}  // namespace rig::engine
