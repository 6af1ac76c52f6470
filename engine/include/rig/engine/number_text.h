// Numbers as an operator writes them, in rig-agent's options, its config file and the RIG_*
// variables (env_settings.h): one rule everywhere. A whole number is decimal digits only (no
// sign, no space, no fraction); a byte size is a whole number with an optional unit: KiB, MiB,
// GiB or TiB, powers of 1024, spelled so. "1.5GiB", "1GB", "1k" and "1 MiB" are refused rather
// than guessed at (is k 1000 or 1024?).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace rig::engine {

enum class Units { kNone, kBytes };  // a whole number only; or one with a byte unit

// The number `text` says, if it is within 0..max (a unit's product too: never wrapped);
// nothing otherwise (empty, malformed, or past max).
std::optional<std::uint64_t> parse_number(std::string_view text, std::uint64_t max, Units units);

// What a byte size may be written as, for error messages.
inline constexpr const char* kByteSizeForm =
    "a whole number of bytes below 2^64, optionally with a unit: KiB, MiB, GiB or TiB (powers of "
    "1024; no fraction, sign or space)";

}  // namespace rig::engine
