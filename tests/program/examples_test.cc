// The shipped examples: assembled, loaded and run on random data, each compared with the same
// computation written in C++.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

#include "program_test_support.h"

namespace rig::program::testing {
namespace {

Image load_example(const std::string& file) {
  std::ifstream in(std::string(RIG_PROGRAM_EXAMPLES_DIR) + "/" + file);
  EXPECT_TRUE(in) << "cannot read " << file;
  std::stringstream text;
  text << in.rdbuf();
  return assemble_and_load(text.str());
}

std::vector<std::uint32_t> random_words(std::mt19937& rng, std::size_t n) {
  std::vector<std::uint32_t> out(n);
  for (auto& w : out) w = static_cast<std::uint32_t>(rng());
  return out;
}

std::size_t random_size(std::mt19937& rng) {
  return std::uniform_int_distribution<std::size_t>(1, 600)(rng);
}

constexpr int kTrials = 25;

TEST(Examples, FillSetsEveryWord) {
  const Image image = load_example("fill.rasm");
  std::mt19937 rng(1);
  for (int trial = 0; trial < kTrials; ++trial) {
    const std::size_t n = random_size(rng);
    const std::uint32_t value = static_cast<std::uint32_t>(rng());
    MemoryObjects objects;
    objects.set_words(9, random_words(rng, n));
    const Outcome outcome = run_function(image, "fill", {9, value}, objects);
    ASSERT_TRUE(outcome.ok) << outcome.fault;
    EXPECT_EQ(objects.words(9), std::vector<std::uint32_t>(n, value)) << "n=" << n;
  }
}

TEST(Examples, AddSumsTwoBuffersOverTheShortest) {
  const Image image = load_example("add.rasm");
  std::mt19937 rng(2);
  for (int trial = 0; trial < kTrials; ++trial) {
    const auto a = random_words(rng, random_size(rng));
    const auto b = random_words(rng, random_size(rng));
    const auto c_before = random_words(rng, random_size(rng));
    auto expected = c_before;
    const std::size_t n = std::min({a.size(), b.size(), c_before.size()});
    for (std::size_t i = 0; i < n; ++i) expected[i] = a[i] + b[i];

    MemoryObjects objects;
    objects.set_words(1, a);
    objects.set_words(2, b);
    objects.set_words(3, c_before);
    const Outcome outcome = run_function(image, "add", {1, 2, 3}, objects);
    ASSERT_TRUE(outcome.ok) << outcome.fault;
    EXPECT_EQ(objects.words(3), expected);
    EXPECT_EQ(objects.words(1), a);
    EXPECT_EQ(objects.words(2), b);
  }
}

std::uint32_t fnv1a_words(const std::vector<std::uint32_t>& words) {
  std::uint32_t hash = 2166136261u;
  for (std::uint32_t w : words) hash = (hash ^ w) * 16777619u;
  return hash;
}

TEST(Examples, ChecksumIsFnv1aOverWords) {
  const Image image = load_example("checksum.rasm");
  std::mt19937 rng(3);
  for (int trial = 0; trial < kTrials; ++trial) {
    const auto input = random_words(rng, random_size(rng));
    MemoryObjects objects;
    objects.set_words(1, input);
    objects.set_words(2, {0, 0xAAAAAAAA});
    const Outcome outcome = run_function(image, "checksum", {1, 2}, objects);
    ASSERT_TRUE(outcome.ok) << outcome.fault;
    EXPECT_EQ(objects.words(2), (std::vector<std::uint32_t>{fnv1a_words(input), 0xAAAAAAAA}));
  }
  // A known value: FNV-1a of the single word 0 is the offset basis times the prime.
  MemoryObjects objects;
  objects.set_words(1, {0});
  objects.set_words(2, {0});
  ASSERT_TRUE(run_function(image, "checksum", {1, 2}, objects).ok);
  EXPECT_EQ(objects.words(2)[0], 0x050C5D1Fu);
}

TEST(Examples, ChecksumIgnoresTrailingPartialWord) {
  const Image image = load_example("checksum.rasm");
  MemoryObjects objects;
  objects.set_words(1, {5, 6});
  objects.bytes(1).push_back(std::byte{0x77});
  objects.set_words(2, {0});
  ASSERT_TRUE(run_function(image, "checksum", {1, 2}, objects).ok);
  EXPECT_EQ(objects.words(2)[0], fnv1a_words({5, 6}));
}

TEST(Examples, CounterIncrementsWordZeroOnly) {
  const Image image = load_example("counter.rasm");
  std::mt19937 rng(4);
  auto words = random_words(rng, 3);
  words[0] = 0xFFFFFFFE;
  MemoryObjects objects;
  objects.set_words(1, words);
  for (int i = 0; i < 3; ++i) {
    const Outcome outcome = run_function(image, "counter", {1}, objects);
    ASSERT_TRUE(outcome.ok) << outcome.fault;
    EXPECT_EQ(outcome.instructions, 4u);
  }
  words[0] = 1;  // 0xFFFFFFFE + 3, modulo 2^32
  EXPECT_EQ(objects.words(1), words);
}

TEST(Examples, ExamplesFaultOnBuffersTheyCannotReach) {
  MemoryObjects objects;
  EXPECT_EQ(run_function(load_example("counter.rasm"), "counter", {42}, objects).fault,
            "function 'counter': at entry (pc 0): param 0 is object 42, which is no buffer this "
            "launch may touch");
  objects.bytes(1).assign(3, std::byte{0});  // shorter than one word
  EXPECT_EQ(run_function(load_example("counter.rasm"), "counter", {1}, objects).fault,
            "function 'counter': pc 0 (instruction 0): ld: word index 0 is outside param 0's "
            "buffer (0 words)");
}

}  // namespace
}  // namespace rig::program::testing
