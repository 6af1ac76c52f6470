// The bytes rig-bench moves and how it checks them: a pseudo-random pattern (no period a copy at
// a wrong offset could hide in), a poison value written before a copy lands, and checks that
// throw BytesDiffer naming the first wrong byte. A bench that moves wrong bytes fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

namespace rig::bench {

inline constexpr std::byte kPoison{0xA5};

struct BytesDiffer : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Fills `out` with the pattern of `seed` (splitmix64, 8 bytes at a time).
void fill_pattern(std::span<std::byte> out, std::uint64_t seed);
void poison(std::span<std::byte> out);

// Throws BytesDiffer unless got[0..n) == want[0..n); `what` names the copy.
void expect_bytes(const std::byte* got, const std::byte* want, std::size_t n, const std::string& what);
// Throws BytesDiffer unless every byte of got[0..n) is still kPoison (nothing wrote there).
void expect_poison(const std::byte* got, std::size_t n, const std::string& what);

}  // namespace rig::bench
