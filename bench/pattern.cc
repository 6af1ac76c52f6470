#include "pattern.h"

#include <cstring>

namespace rig::bench {
namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

[[noreturn]] void differ(const std::byte* got, const std::byte* want, std::size_t n, std::size_t at,
                         const std::string& what) {
  char buf[160];
  std::snprintf(buf, sizeof buf, ": byte %zu of %zu is 0x%02x, expected 0x%02x", at, n,
                static_cast<unsigned>(got[at]), static_cast<unsigned>(want != nullptr ? want[at] : kPoison));
  throw BytesDiffer("wrong bytes in " + what + buf);
}

}  // namespace

void fill_pattern(std::span<std::byte> out, std::uint64_t seed) {
  std::uint64_t state = seed;
  std::size_t i = 0;
  for (; i + 8 <= out.size(); i += 8) {
    const std::uint64_t x = splitmix64(state);
    std::memcpy(out.data() + i, &x, 8);
  }
  const std::uint64_t x = splitmix64(state);
  std::memcpy(out.data() + i, &x, out.size() - i);
}

void poison(std::span<std::byte> out) { std::memset(out.data(), static_cast<int>(kPoison), out.size()); }

void expect_bytes(const std::byte* got, const std::byte* want, std::size_t n, const std::string& what) {
  if (std::memcmp(got, want, n) == 0) return;
  std::size_t at = 0;
  while (got[at] == want[at]) ++at;
  differ(got, want, n, at, what);
}

void expect_poison(const std::byte* got, std::size_t n, const std::string& what) {
  for (std::size_t at = 0; at < n; ++at) {
    if (got[at] != kPoison) differ(got, nullptr, n, at, what + " (a byte outside the copy changed)");
  }
}

}  // namespace rig::bench
