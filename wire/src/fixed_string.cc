// The text fields of fixed width (an account's name and arch, an agent's name): NUL-padded, with
// at least one NUL.
#include <algorithm>
#include <cstring>
#include <string_view>

#include "rig/wire/codec.h"
#include "rig/wire/messages.h"

namespace rig::wire {

namespace {
std::string_view text_of(const char* field, std::size_t n) {
  const void* nul = std::memchr(field, 0, n);
  return {field, nul ? static_cast<std::size_t>(static_cast<const char*>(nul) - field) : 0};
}
void set_text(char* field, std::size_t n, std::string_view text) {
  std::memset(field, 0, n);
  std::memcpy(field, text.data(), std::min(text.size(), n - 1));
}
}  // namespace

std::string_view fixed_string(const char (&field)[32]) { return text_of(field, sizeof field); }
std::string_view fixed_string(const char (&field)[kAgentNameBytes]) { return text_of(field, sizeof field); }
void set_fixed_string(char (&field)[32], std::string_view text) { set_text(field, sizeof field, text); }
void set_fixed_string(char (&field)[kAgentNameBytes], std::string_view text) { set_text(field, sizeof field, text); }

}  // namespace rig::wire
