#include "rig/engine/env_settings.h"

#include <array>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <string_view>

#include "rig/engine/number_text.h"
#include "rig/wire/messages.h"

namespace rig::engine {
namespace {

constexpr std::uint64_t kMaxPollUs = 1'000'000;
constexpr std::uint64_t kMaxBytes = std::uint64_t{1} << 40;  // 1 TiB, as --send-zc-bytes

// One variable: its name, what it takes (the error's words), its default (docs/ENVIRONMENT.md),
// and how a value that is set lands in the settings (false: a value it does not take).
// A variable read at each use (a secret's) has no `take`: parse_env_settings passes it by.
struct Variable {
  EnvVariable about;
  bool (*take)(std::string_view value, EnvSettings& s);
};

template <class T>
bool take_number(std::string_view value, std::uint64_t max, Units units, T& into) {
  const auto n = parse_number(value, max, units);
  if (n) into = static_cast<T>(*n);
  return n.has_value();
}

constexpr Variable kVariables[] = {
    {{"RIG_SOCKET_BACKEND", "uring or plain", "io_uring where the kernel allows a ring, else plain"},
     [](std::string_view v, EnvSettings& s) {
       if (v == "uring") s.backend = Backend::kUring;
       if (v == "plain") s.backend = Backend::kPlain;
       return s.backend.has_value();
     }},
    {{"RIG_POLL_US", "a whole number of microseconds from 0 to 1000000", "0, polling off"},
     [](std::string_view v, EnvSettings& s) { return take_number(v, kMaxPollUs, Units::kNone, s.poll_us); }},
    {{"RIG_SEND_ZC_BYTES", "a byte count from 0 to 1TiB: digits, optionally with KiB, MiB, GiB or TiB",
      "off towards loopback, 1 MiB otherwise"},
     [](std::string_view v, EnvSettings& s) {
       std::size_t n = 0;
       const bool ok = take_number(v, kMaxBytes, Units::kBytes, n);
       if (ok) s.send_zc_bytes = n;
       return ok;
     }},
    {{"RIG_SQPOLL", "1, on, 0 or off", "on from 8 usable CPUs, off below"},
     [](std::string_view v, EnvSettings& s) {
       if (v == "1" || v == "on") s.sq_polling = true;
       if (v == "0" || v == "off") s.sq_polling = false;
       return s.sq_polling.has_value();
     }},
    {{"RIG_STRIPES", "a whole number from 0 to 16", "none on loopback, 4 otherwise"},
     [](std::string_view v, EnvSettings& s) {
       int n = 0;
       const bool ok = take_number(v, wire::kMaxStripes, Units::kNone, n);
       if (ok) s.stripes = n;
       return ok;
     }},
    {{"RIG_STRIPE_WINDOW_BYTES", "a byte count from 0 to 1TiB: digits, optionally with KiB, MiB, GiB or TiB",
      "0, no bound"},
     [](std::string_view v, EnvSettings& s) {
       return take_number(v, kMaxBytes, Units::kBytes, s.stripe_window_bytes);
     }},
    {{"RIG_SECRET_FILE", "the path of a regular file of at least 32 bytes, owned by this user and readable by no one else",
      "RIG_SECRET"},
     nullptr},
    {{"RIG_SECRET", "a secret of at least 32 bytes", "no secret: open agents, on loopback only", true}, nullptr},
};
static_assert(wire::kMaxStripes == 16, "RIG_STRIPES's text names the bound");

}  // namespace

wire::Result<EnvSettings> parse_env_settings(const std::function<const char*(const char*)>& lookup) {
  EnvSettings s;
  for (const Variable& v : kVariables) {
    const EnvVariable& a = v.about;
    const char* value = v.take != nullptr ? lookup(a.name) : nullptr;
    if (value == nullptr || *value == '\0') continue;
    if (!v.take(value, s)) {
      return wire::Outcome::failed(-EINVAL, std::string(a.name) + "=" + value + ": " + a.name + " takes " + a.takes +
                                                " (unset or empty: " + a.fallback + ")");
    }
  }
  return s;
}

const wire::Result<EnvSettings>& env_settings() {
  static const wire::Result<EnvSettings> kept =
      parse_env_settings([](const char* name) { return std::getenv(name); });
  return kept;
}

std::span<const EnvVariable> env_variables() {
  static const auto kAbout = [] {
    std::array<EnvVariable, std::size(kVariables)> about{};
    for (std::size_t i = 0; i < about.size(); ++i) about[i] = kVariables[i].about;
    return about;
  }();
  return kAbout;
}

const char* env_text(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr || *value == '\0' ? nullptr : value;
}

}  // namespace rig::engine
