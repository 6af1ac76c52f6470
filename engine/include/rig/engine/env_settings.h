// The RIG_* variables that the library and rig-agent read: each declared once in
// env_settings.cc (its name, what it takes, its default) and parsed by one rule. Unset or empty:
// the default. Any other value it does not take is an error naming the variable and what it
// takes ("RIG_STRIPES=-3: RIG_STRIPES takes a whole number from 0 to 16 (unset or empty: ...)"),
// never a silent default. Where the error surfaces (docs/ENVIRONMENT.md): rig-agent and rig-info refuse to
// start; the library's Job::connect throws it (std::invalid_argument; the C ABI's
// RIG_INVALID_ARGUMENT with the text) before it connects. Each is read once per process, at the
// first call, and kept: the readers (a socket's zero-copy threshold, a ring's SQ polling) find
// the kept values at no cost, through env_settings()'s value, which those edges checked first.
// The library never changes the environment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>

#include "rig/engine/backend.h"
#include "rig/wire/outcome.h"

namespace rig::engine {

struct EnvSettings {
  std::optional<Backend> backend;             // RIG_SOCKET_BACKEND (default_backend)
  int poll_us = 0;                            // RIG_POLL_US (default_poll_us)
  std::optional<std::size_t> send_zc_bytes;   // RIG_SEND_ZC_BYTES (resolve_send_zc_bytes)
  std::optional<bool> sq_polling;             // RIG_SQPOLL (sq_polling)
  std::optional<int> stripes;                 // RIG_STRIPES (a link's LinkOptions::kAuto stripes)
  std::size_t stripe_window_bytes = 0;        // RIG_STRIPE_WINDOW_BYTES (default_stripe_window_bytes)
};

// The settings that `lookup` (a variable's value, or null) gives. Fails with -EINVAL for the
// first variable whose value is bad: "NAME=VALUE: NAME takes ...".
wire::Result<EnvSettings> parse_env_settings(const std::function<const char*(const char*)>& lookup);

// The process's settings, read from its environment at the first call and kept: the failure of
// parse_env_settings while a value is bad. The edges check it before any reader runs; a reader
// that finds it failed is a program that skipped the check, stopped by Result's value().
const wire::Result<EnvSettings>& env_settings();

// A RIG_* variable as env_settings.cc declares it, for those that list them (rig-info).
struct EnvVariable {
  const char* name;
  const char* takes;     // what it takes (the error's words)
  const char* fallback;  // what unset or empty means
  bool secret;           // its value is never shown, only whether it is set (RIG_SECRET)
};

// Every RIG_* variable the library and rig-agent read, each once, in the table's order: those
// kept in EnvSettings and those read at each use (env_text: RIG_SECRET_FILE, RIG_SECRET).
std::span<const EnvVariable> env_variables();

// A variable read at each use, by the same rule (secrets are never kept: RIG_SECRET_FILE,
// RIG_SECRET): its value, or null when unset or empty.
const char* env_text(const char* name);

}  // namespace rig::engine
