// The reader's idle watch (FrameReader::set_idle_watch): while the reader waits for the peer,
// each tick of the interval calls the watch with the silence so far, one interval more per tick,
// counted from the wait's start; bytes start the count over, and a wake runs the watch with the
// silence so far without adding to it. The watch sees a count of ticks, not a clock reading, so
// these tests hold on a machine of any speed.
#include <sys/eventfd.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rig/engine/counters.h"
#include "rig/engine/frame_reader.h"
#include "rig/engine/iov_cursor.h"
#include "rig/wire/codec.h"
#include "rig/wire/messages.h"
#include "socket_pair.h"

namespace rig::engine {
namespace {

constexpr int kIntervalMs = 5;

// A reader on one end of a loopback pair, read on the test's own thread: the watch runs there
// too, so what it records needs no synchronisation.
class IdleWatch : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    pair_ = connected(GetParam());
    reader_ = std::make_unique<FrameReader>(*pair_.b, counters_);
  }
  void send_ping() {
    const auto ping = wire::frame(wire::MsgType::kPing, wire::Ping{7});
    const iovec iov = to_iov(&ping, sizeof ping);
    EXPECT_EQ(pair_.a->send_all({&iov, 1}), 0);
  }
  int next() { return reader_->next(h_).err(); }

  Pair pair_;
  Counters counters_;
  std::unique_ptr<FrameReader> reader_;
  std::vector<std::int64_t> seen_;
  wire::FrameHeader h_{};
};

TEST_P(IdleWatch, TheSilenceGrowsByOneIntervalPerTickUntilTheWatchEndsTheRead) {
  reader_->set_idle_watch(kIntervalMs, [&](std::int64_t silent) {
    seen_.push_back(silent);
    return seen_.size() == 4 ? -ETIMEDOUT : 0;
  });
  EXPECT_EQ(next(), -ETIMEDOUT);
  EXPECT_EQ(seen_, (std::vector<std::int64_t>{5, 10, 15, 20}));
}

TEST_P(IdleWatch, AFrameStartsTheSilenceOverForTheNextWait) {
  reader_->set_idle_watch(kIntervalMs, [&](std::int64_t silent) {
    seen_.push_back(silent);
    if (seen_.size() == 2) send_ping();  // the peer speaks after two ticks of silence
    return seen_.size() == 4 ? -ETIMEDOUT : 0;
  });
  EXPECT_EQ(next(), 0);
  EXPECT_EQ(h_.type, static_cast<std::uint16_t>(wire::MsgType::kPing));
  EXPECT_EQ(reader_->skip(h_.length), 0);
  EXPECT_EQ(next(), -ETIMEDOUT);
  EXPECT_EQ(seen_, (std::vector<std::int64_t>{5, 10, 5, 10})) << "the silence before the ping was counted again";
}

TEST_P(IdleWatch, AWakeAfterTicksRunsTheWatchWithTheSilenceSoFarAndAddsNothing) {
  const int wake = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(wake, 0);
  reader_->set_wake(wake, [] { return 0; });
  reader_->set_idle_watch(kIntervalMs, [&](std::int64_t silent) {
    seen_.push_back(silent);
    if (seen_.size() == 2) {
      const std::uint64_t one = 1;
      EXPECT_EQ(::write(wake, &one, sizeof one), static_cast<ssize_t>(sizeof one));
    }
    return seen_.size() == 4 ? -ETIMEDOUT : 0;
  });
  EXPECT_EQ(next(), -ETIMEDOUT);
  EXPECT_EQ(seen_, (std::vector<std::int64_t>{5, 10, 10, 15})) << "the wake reset or advanced the silence";
  ::close(wake);
}

INSTANTIATE_TEST_SUITE_P(Backends, IdleWatch, kBackends, backend_test_name);

}  // namespace
}  // namespace rig::engine
