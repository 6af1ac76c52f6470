#include "rig/engine/number_text.h"

namespace rig::engine {
namespace {

// The units a byte size may end with, and their shifts.
constexpr struct {
  std::string_view suffix;
  unsigned shift;
} kUnits[] = {{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}};

std::optional<std::uint64_t> parse_digits(std::string_view text, std::uint64_t max) {
  if (text.empty()) return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (v > (max - digit) / 10 || digit > max) return std::nullopt;  // past max (and never past 2^64)
    v = v * 10 + digit;
  }
  return v;
}

}  // namespace

std::optional<std::uint64_t> parse_number(std::string_view text, std::uint64_t max, Units units) {
  if (units == Units::kBytes) {
    for (const auto& u : kUnits) {
      if (text.size() > u.suffix.size() && text.ends_with(u.suffix)) {
        const auto n = parse_digits(text.substr(0, text.size() - u.suffix.size()), max >> u.shift);
        if (!n) return std::nullopt;
        return *n << u.shift;  // within max: n is at most max >> shift
      }
    }
  }
  return parse_digits(text, max);
}

}  // namespace rig::engine
