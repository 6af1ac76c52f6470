// Numbers from the environment for the engine's settings (RIG_POLL_US, RIG_SEND_ZC_BYTES,
// RIG_STRIPE_WINDOW_BYTES). Internal to the engine.
#pragma once

#include <cstdint>
#include <optional>

namespace rig::engine {

// The value of variable `name` when it is set to decimal digits only (no sign, no space) of a
// number no larger than `max`; nothing otherwise (unset, empty or malformed: the caller's
// default applies, as docs/TUNING.md says of each variable).
std::optional<std::uint64_t> env_number(const char* name, std::uint64_t max);

}  // namespace rig::engine
