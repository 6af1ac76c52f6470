// What the decoders of wire/src share (codec.cc, codec_handshake.cc): a reason for a failed
// decode, the fixed part of a body, views of its tail, overflow-checked sums. Internal.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "rig/wire/messages.h"
#include "rig/wire/outcome.h"

namespace rig::wire::decoding {

// A body that breaks the protocol: -EPROTO, the message's name and what is wrong with it.
inline Outcome fail(const char* msg, const std::string& detail) {
  return violation(std::string(msg) + ": " + detail);
}

template <class M>
Outcome read_fixed(std::span<const std::byte> body, M& out, const char* name) {
  if (body.size() < sizeof(M)) {
    return fail(name,
                "body of " + std::to_string(body.size()) + " bytes is shorter than its " +
                    std::to_string(sizeof(M)) + "-byte fixed part");
  }
  std::memcpy(&out, body.data(), sizeof(M));
  return {};
}

template <class M>
Outcome exact(std::span<const std::byte> body, M& out, const char* name) {
  RIG_RETURN_IF_FAILED(read_fixed(body, out, name));
  if (body.size() != sizeof(M)) {
    return fail(name,
                "body of " + std::to_string(body.size()) + " bytes, expected exactly " +
                    std::to_string(sizeof(M)));
  }
  return {};
}

template <class T>
std::span<const T> view_of(std::span<const std::byte> bytes, std::size_t offset, std::size_t n) {
  return {reinterpret_cast<const T*>(bytes.data() + offset), n};
}

inline bool aligned(std::span<const std::byte> body) {
  return reinterpret_cast<std::uintptr_t>(body.data()) % 8 == 0;
}

inline bool terminated(const char (&field)[32]) { return std::memchr(field, 0, sizeof field) != nullptr; }

// a + b without wrapping, or false.
inline bool add_ok(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
  return !__builtin_add_overflow(a, b, &out);
}
inline bool mul_ok(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
  return !__builtin_mul_overflow(a, b, &out);
}

}  // namespace rig::wire::decoding
