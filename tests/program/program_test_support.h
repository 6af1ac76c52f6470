// Helpers for the rig.program tests: a hand builder of binaries, in-memory objects, and
// shorthands to assemble and run.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "rig/program/program.h"

namespace rig::program::testing {

// One raw 8-byte instruction.
struct Raw {
  std::uint8_t op = 0, a = 0, b = 0, c = 0;
  std::uint32_t imm = 0;
};

inline constexpr std::uint8_t kRet = 0x01;
inline constexpr std::uint8_t kConst = 0x02;
inline constexpr std::uint8_t kMov = 0x03;
inline constexpr std::uint8_t kParam = 0x04;
inline constexpr std::uint8_t kAdd = 0x10;
inline constexpr std::uint8_t kDivuI = 0x23;
inline constexpr std::uint8_t kRemuI = 0x24;
inline constexpr std::uint8_t kJmp = 0x30;
inline constexpr std::uint8_t kBeq = 0x31;
inline constexpr std::uint8_t kLd = 0x40;
inline constexpr std::uint8_t kSize = 0x44;
inline constexpr std::uint8_t kScratch = 0xFF;
inline constexpr std::uint8_t kNoIndex = 0xFF;

struct RawFunction {
  std::string name = "f";
  std::uint32_t n_params = 0;
  std::uint32_t buffer_mask = 0;
  std::uint32_t scratch_bytes = 0;
  std::vector<Raw> code = {Raw{kRet}};
};

// Byte offsets of the format, restated here so that the tests check the documented layout
// rather than the library's own constants.
inline constexpr std::size_t kHeaderBytes = 20;
inline constexpr std::size_t kEntryBytes = 28;
inline std::size_t entry_offset(std::size_t function) { return kHeaderBytes + function * kEntryBytes; }

inline void put_u32(std::vector<std::byte>& out, std::size_t offset, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out[offset + i] = static_cast<std::byte>(v >> (8 * i));
}
inline void put_u16(std::vector<std::byte>& out, std::size_t offset, std::uint16_t v) {
  out[offset] = static_cast<std::byte>(v & 0xFF);
  out[offset + 1] = static_cast<std::byte>(v >> 8);
}
inline void append_u32(std::vector<std::byte>& out, std::uint32_t v) {
  out.resize(out.size() + 4);
  put_u32(out, out.size() - 4, v);
}

// Lays functions out exactly as FORMAT.md describes: names and code in function order.
inline std::vector<std::byte> build(const std::vector<RawFunction>& functions) {
  std::vector<std::byte> out;
  for (char c : std::string_view("RIGP")) out.push_back(static_cast<std::byte>(c));
  out.resize(out.size() + 4);
  put_u16(out, 4, 1);
  put_u16(out, 6, 0);
  std::uint32_t names = 0, code = 0;
  for (const auto& f : functions) {
    names += static_cast<std::uint32_t>(f.name.size());
    code += static_cast<std::uint32_t>(f.code.size() * 8);
  }
  append_u32(out, static_cast<std::uint32_t>(functions.size()));
  append_u32(out, names);
  append_u32(out, code);
  std::uint32_t name_offset = 0, code_offset = 0;
  for (const auto& f : functions) {
    append_u32(out, name_offset);
    append_u32(out, static_cast<std::uint32_t>(f.name.size()));
    append_u32(out, f.n_params);
    append_u32(out, f.buffer_mask);
    append_u32(out, f.scratch_bytes);
    append_u32(out, code_offset);
    append_u32(out, static_cast<std::uint32_t>(f.code.size() * 8));
    name_offset += static_cast<std::uint32_t>(f.name.size());
    code_offset += static_cast<std::uint32_t>(f.code.size() * 8);
  }
  for (const auto& f : functions) {
    for (char c : f.name) out.push_back(static_cast<std::byte>(c));
  }
  for (const auto& f : functions) {
    for (const Raw& r : f.code) {
      out.push_back(static_cast<std::byte>(r.op));
      out.push_back(static_cast<std::byte>(r.a));
      out.push_back(static_cast<std::byte>(r.b));
      out.push_back(static_cast<std::byte>(r.c));
      append_u32(out, r.imm);
    }
  }
  return out;
}

// The reason `binary` is rejected, or "" if it loads.
inline std::string rejection(std::span<const std::byte> binary) {
  auto loaded = Image::load(binary);
  if (auto* reason = std::get_if<std::string>(&loaded)) return *reason;
  return "";
}

inline Image load_or_fail(std::span<const std::byte> binary) {
  auto loaded = Image::load(binary);
  if (auto* reason = std::get_if<std::string>(&loaded)) {
    ADD_FAILURE() << "binary rejected: " << *reason;
    // An image that cannot be run; the test has already failed.
    return std::get<Image>(Image::load(build({RawFunction{}})));
  }
  return std::get<Image>(std::move(loaded));
}

inline std::vector<std::byte> assemble_or_fail(std::string_view text) {
  auto result = assemble(text);
  if (auto* reason = std::get_if<std::string>(&result)) {
    ADD_FAILURE() << "assembly failed: " << *reason;
    return {};
  }
  return std::get<std::vector<std::byte>>(std::move(result));
}

inline Image assemble_and_load(std::string_view text) { return load_or_fail(assemble_or_fail(text)); }

// The assembler's error for `text`, or "" if it assembles.
inline std::string assembly_error(std::string_view text) {
  auto result = assemble(text);
  if (auto* reason = std::get_if<std::string>(&result)) return *reason;
  return "";
}

// Objects held in memory, by id.
class MemoryObjects : public Objects {
 public:
  std::span<std::byte> resolve(std::uint32_t id) override {
    auto it = objects_.find(id);
    if (it == objects_.end()) return {};
    return it->second;
  }

  std::vector<std::byte>& bytes(std::uint32_t id) { return objects_[id]; }

  void set_words(std::uint32_t id, const std::vector<std::uint32_t>& words) {
    auto& b = objects_[id];
    b.assign(words.size() * 4, std::byte{0});
    for (std::size_t i = 0; i < words.size(); ++i) put_u32(b, i * 4, words[i]);
  }

  std::vector<std::uint32_t> words(std::uint32_t id) {
    const auto& b = objects_.at(id);
    std::vector<std::uint32_t> out(b.size() / 4);
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = std::to_integer<std::uint32_t>(b[i * 4]) |
               std::to_integer<std::uint32_t>(b[i * 4 + 1]) << 8 |
               std::to_integer<std::uint32_t>(b[i * 4 + 2]) << 16 |
               std::to_integer<std::uint32_t>(b[i * 4 + 3]) << 24;
    }
    return out;
  }

 private:
  std::map<std::uint32_t, std::vector<std::byte>> objects_;
};

inline Outcome run_function(const Image& image, std::string_view name,
                            std::vector<std::uint32_t> words, Objects& objects,
                            std::uint64_t budget = 1'000'000,
                            std::span<std::byte> scratch = {}) {
  const auto index = image.find(name);
  if (!index) {
    ADD_FAILURE() << "no function " << name;
    return {};
  }
  std::vector<std::byte> own_scratch;
  if (scratch.empty()) {
    own_scratch.resize(image.function(*index).scratch_bytes);
    scratch = own_scratch;
  }
  Launch launch{&image, *index, words, scratch};
  return run(launch, objects, budget);
}

}  // namespace rig::program::testing
