#include "env_number.h"

#include <cstdlib>

namespace rig::engine {

std::optional<std::uint64_t> env_number(const char* name, std::uint64_t max) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  std::uint64_t v = 0;
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9') return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(*c - '0');
    if (digit > max || v > (max - digit) / 10) return std::nullopt;  // past max (and never past 2^64)
    v = v * 10 + digit;
  }
  return v;
}

}  // namespace rig::engine
