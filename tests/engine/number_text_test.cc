// Numbers as an operator writes them (number_text.h): digits only, and byte sizes with a unit of
// 1024s; anything else, and anything past the bound, is nothing rather than a guess.
#include "rig/engine/number_text.h"

#include <gtest/gtest.h>

namespace rig::engine {
namespace {

std::optional<std::uint64_t> whole(const char* text, std::uint64_t max) { return parse_number(text, max, Units::kNone); }
std::optional<std::uint64_t> bytes(const char* text, std::uint64_t max = UINT64_MAX) {
  return parse_number(text, max, Units::kBytes);
}

TEST(NumberText, DecimalDigitsWithinTheBoundAreTheNumber) {
  EXPECT_EQ(whole("0", 10), 0u);
  EXPECT_EQ(whole("65536", 1u << 20), 65536u);
  EXPECT_EQ(whole("1000000", 1'000'000), 1'000'000u) << "the bound itself is allowed";
  EXPECT_EQ(whole("007", 10), 7u);
  EXPECT_EQ(whole("18446744073709551615", UINT64_MAX), UINT64_MAX);
}

TEST(NumberText, EmptySignsSpacesOtherFormsOrPastTheBoundAreNothing) {
  EXPECT_FALSE(whole("", 10));
  EXPECT_FALSE(whole("-1", 10));
  EXPECT_FALSE(whole("+1", 10));
  EXPECT_FALSE(whole(" 1", 10));
  EXPECT_FALSE(whole("1 ", 10));
  EXPECT_FALSE(whole("1k", 10));
  EXPECT_FALSE(whole("1KiB", UINT64_MAX)) << "a whole number takes no unit";
  EXPECT_FALSE(whole("0x10", 100));
  EXPECT_FALSE(whole("1.5", 10));
  EXPECT_FALSE(whole("11", 10));
  EXPECT_FALSE(whole("7", 5)) << "one digit past a bound below 9";
  EXPECT_FALSE(whole("1000001", 1'000'000)) << "one past the bound";
  EXPECT_FALSE(whole("18446744073709551616", UINT64_MAX)) << "2^64 wraps no counter";
  EXPECT_FALSE(whole("99999999999999999999999", UINT64_MAX));
}

TEST(NumberText, EachUnitIsAPowerOf1024) {
  EXPECT_EQ(bytes("4096"), 4096u) << "no unit: bytes";
  EXPECT_EQ(bytes("0KiB"), 0u);
  EXPECT_EQ(bytes("1KiB"), 1024u);
  EXPECT_EQ(bytes("64MiB"), 64u << 20);
  EXPECT_EQ(bytes("1GiB"), 1u << 30);
  EXPECT_EQ(bytes("3TiB"), std::uint64_t{3} << 40);
  EXPECT_EQ(bytes("1TiB", std::uint64_t{1} << 40), std::uint64_t{1} << 40) << "the bound itself, with a unit";
  EXPECT_EQ(bytes("17179869183GiB"), std::uint64_t{17179869183} << 30) << "the largest GiB below 2^64";
}

TEST(NumberText, AByteSizePastItsBoundOrWrappingAtItsUnitIsNothing) {
  EXPECT_FALSE(bytes("17179869184GiB")) << "2^64: wraps to 0 at the unit";
  EXPECT_FALSE(bytes("16777216TiB")) << "2^64 in TiB";
  EXPECT_FALSE(bytes("18446744073709551616"));
  EXPECT_FALSE(bytes("1025KiB", 1u << 20)) << "one KiB past the bound";
  EXPECT_FALSE(bytes("1048577", 1u << 20)) << "one byte past the bound";
}

TEST(NumberText, AmbiguousOrMalformedSizesAreNothing) {
  for (const char* bad : {"", "1.5GiB", "1GB", "1G", "1k", "1K", "1M", "1kib", "1gib", "1 MiB", " 1MiB", "1MiB ",
                          "-1MiB", "+1MiB", "MiB", "1MiBMiB", "1B", "1EiB", "0x1MiB", "1e3"}) {
    EXPECT_FALSE(bytes(bad)) << "'" << bad << "'";
  }
}

}  // namespace
}  // namespace rig::engine
