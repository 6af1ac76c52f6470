// The engine's settings from the environment: decimal digits within a bound, or nothing.
#include "env_number.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace rig::engine {
namespace {

constexpr const char* kName = "RIG_TEST_ENV_NUMBER";

std::optional<std::uint64_t> with(const char* value, std::uint64_t max) {
  if (value == nullptr) {
    ::unsetenv(kName);
  } else {
    ::setenv(kName, value, 1);
  }
  const auto v = env_number(kName, max);
  ::unsetenv(kName);
  return v;
}

TEST(EnvNumber, DecimalDigitsWithinTheBoundAreTheNumber) {
  EXPECT_EQ(with("0", 10), 0u);
  EXPECT_EQ(with("65536", 1u << 20), 65536u);
  EXPECT_EQ(with("1000000", 1'000'000), 1'000'000u) << "the bound itself is allowed";
  EXPECT_EQ(with("18446744073709551615", UINT64_MAX), UINT64_MAX);
}

TEST(EnvNumber, UnsetEmptyMalformedOrPastTheBoundIsNothing) {
  EXPECT_FALSE(with(nullptr, 10));
  EXPECT_FALSE(with("", 10));
  EXPECT_FALSE(with("-1", 10));
  EXPECT_FALSE(with("+1", 10));
  EXPECT_FALSE(with(" 1", 10));
  EXPECT_FALSE(with("1 ", 10));
  EXPECT_FALSE(with("1k", 10));
  EXPECT_FALSE(with("0x10", 100));
  EXPECT_FALSE(with("11", 10));
  EXPECT_FALSE(with("7", 5)) << "one digit past a bound below 9";
  EXPECT_FALSE(with("1000001", 1'000'000));
  EXPECT_FALSE(with("18446744073709551616", UINT64_MAX)) << "2^64 wraps no counter";
  EXPECT_FALSE(with("99999999999999999999999", UINT64_MAX));
}

}  // namespace
}  // namespace rig::engine
