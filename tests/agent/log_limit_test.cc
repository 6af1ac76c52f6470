// A line of one kind is logged at most once per period: the first at once, and the next one
// logged says how many were left out meanwhile.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "process/log_limit.h"

namespace rig::agent {
namespace {

TEST(LogLimit, TheFirstLineIsLoggedAndTheRestOfItsPeriodLeftOut) {
  LogLimit limit(std::chrono::hours(1));
  std::uint64_t left_out = 99;
  EXPECT_TRUE(limit.allow(left_out));
  EXPECT_EQ(left_out, 0u);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(limit.allow(left_out)) << i;
}

TEST(LogLimit, TheFirstLineAfterThePeriodIsLoggedAndCountsThoseLeftOut) {
  LogLimit limit(std::chrono::milliseconds(20));
  std::uint64_t left_out = 0;
  ASSERT_TRUE(limit.allow(left_out));
  // Two more at once: within the period on any machine that logs a line in under 20 ms; a
  // slower one would log the second, which the test tells apart.
  const auto first = std::chrono::steady_clock::now();
  const bool second = limit.allow(left_out), third = limit.allow(left_out);
  if (std::chrono::steady_clock::now() - first >= std::chrono::milliseconds(20)) GTEST_SKIP() << "the machine was too slow";
  EXPECT_FALSE(second);
  EXPECT_FALSE(third);
  std::this_thread::sleep_for(std::chrono::milliseconds(25));  // the period is over, however slow the machine
  EXPECT_TRUE(limit.allow(left_out));
  EXPECT_EQ(left_out, 2u);
  EXPECT_FALSE(limit.allow(left_out));  // a new period began with it
  std::this_thread::sleep_for(std::chrono::milliseconds(25));
  EXPECT_TRUE(limit.allow(left_out));
  EXPECT_EQ(left_out, 1u) << "the count starts over with each line logged";
}

TEST(LogLimit, TheNoteOfThoseLeftOutIsEmptyForNoneAndCountsThemElse) {
  EXPECT_EQ(left_out_note(0), "");
  EXPECT_EQ(left_out_note(1), " (1 more like it since the last line, not logged)");
}

}  // namespace
}  // namespace rig::agent
