// Reproducible random payloads for copy tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace rig::test {

inline std::vector<std::byte> random_bytes(std::size_t n, std::uint32_t seed) {
  std::vector<std::byte> v(n);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    const std::uint64_t x = rng();
    std::memcpy(v.data() + i, &x, 8);
  }
  for (std::size_t i = n & ~std::size_t{7}; i < n; ++i) v[i] = static_cast<std::byte>(rng());
  return v;
}

}  // namespace rig::test
