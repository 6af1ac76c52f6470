// The job's failure (proxy/src/job.cc): the first cause wins, and every caller of fail reads it
// once fail returns, also the callers that lost the race to write it.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include "rig/remote/job.h"

namespace rig::remote {
namespace {

// Two threads fail the same fresh job at once, round after round. A loser that returned before
// the winner published the cause would read "" (submit then failed with no reason at all).
TEST(Job, OnceFailReturnsEveryCallerReadsTheOneRootCauseAlsoTheLoserOfTheRace) {
  for (int round = 0; round < 500; ++round) {
    auto job = Job::create();
    std::atomic<int> ready{0};
    std::string seen[2];
    auto failer = [&](int i) {
      const std::string why(200, static_cast<char>('a' + i));  // past the small-string buffer: the copy allocates
      ready.fetch_add(1, std::memory_order_acq_rel);
      while (ready.load(std::memory_order_acquire) < 2) {
      }
      job->fail(why);
      seen[i] = job->fault_text();
    };
    std::thread a(failer, 0), b(failer, 1);
    a.join();
    b.join();
    ASSERT_FALSE(seen[0].empty()) << "round " << round << ": a caller of fail read no root cause";
    ASSERT_FALSE(seen[1].empty()) << "round " << round << ": a caller of fail read no root cause";
    ASSERT_EQ(seen[0], seen[1]) << "round " << round;
    ASSERT_EQ(job->fault_text(), seen[0]);
  }
}

// A job whose close began is not failed by a later fail: calls keep "the job is closed".
TEST(Job, AFailAfterTheCloseBeganLeavesTheJobClosedNotFailed) {
  auto job = Job::create();
  job->close();
  job->fail("too late");
  EXPECT_FALSE(job->failed());
  EXPECT_EQ(job->fault_text(), "the job is closed");
}

}  // namespace
}  // namespace rig::remote
