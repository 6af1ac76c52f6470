#include "process/environment.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace rig::agent {
namespace {

// The variable's value, or "" when unset (an empty value counts as unset, as its readers do).
std::string value_of(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

[[noreturn]] void refuse(const char* name, const std::string& value, const char* must) {
  throw std::runtime_error(std::string(name) + "='" + value + "': " + must);
}

}  // namespace

void check_environment() {
  // Read by engine::default_backend() (uring_socket.cc).
  if (const std::string v = value_of("RIG_SOCKET_BACKEND"); !v.empty() && v != "plain" && v != "uring") {
    refuse("RIG_SOCKET_BACKEND", v, "expected plain or uring");
  }
  // Read by engine::resolve_send_zc_bytes() (socket.cc): decimal bytes.
  if (const std::string v = value_of("RIG_SEND_ZC_BYTES"); !v.empty()) {
    if (v.find_first_not_of("0123456789") != std::string::npos || v.size() > 15) {
      refuse("RIG_SEND_ZC_BYTES", v, "expected a byte count (a decimal number, 0: never zero-copy)");
    }
  }
}

}  // namespace rig::agent
