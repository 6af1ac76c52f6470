// The assembler's operand words and the binary's layout (assembly.h).
#include <charconv>
#include <limits>

#include "assembly.h"
#include "format.h"

namespace rig::program::assembly {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

bool is_name(std::string_view s) {
  if (s.empty() || s.size() > kMaxNameBytes) return false;
  for (char c : s) {
    if (!format::is_name_byte(c)) return false;
  }
  return true;
}

std::optional<std::uint64_t> parse_number(std::string_view s) {
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value, base);
  if (s.empty() || end != s.data() + s.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) return std::numeric_limits<std::uint64_t>::max();
  if (ec != std::errc()) return std::nullopt;
  return value;
}

std::uint64_t parse_unsigned(std::string_view s, std::uint64_t max, std::string_view what) {
  const std::optional<std::uint64_t> value = parse_number(s);
  if (!value) throw Error{std::string(what) + " " + quoted(s) + " is not a number"};
  if (*value > max) {
    throw Error{std::string(what) + " " + quoted(s) + " is more than " + std::to_string(max)};
  }
  return *value;
}

std::uint32_t parse_immediate(std::string_view s) {
  std::string_view digits = s;
  const bool negative = !digits.empty() && digits[0] == '-';
  if (negative || (!digits.empty() && digits[0] == '+')) digits.remove_prefix(1);
  const std::optional<std::uint64_t> value = parse_number(digits);
  if (!value) throw Error{"immediate " + quoted(s) + " is not a number"};
  if (*value > (negative ? std::uint64_t{1} << 31 : std::uint64_t{0xFFFFFFFF})) {
    throw Error{"immediate " + quoted(s) + " does not fit in 32 bits (-2147483648..4294967295)"};
  }
  return static_cast<std::uint32_t>(negative ? 0 - *value : *value);
}

bool looks_like_register(std::string_view s) {
  return s.size() >= 2 && s[0] == 'r' && s[1] >= '0' && s[1] <= '9';
}

std::vector<std::byte> lay_out(const std::vector<Function>& functions) {
  std::uint64_t names_bytes = 0, code_bytes = 0;
  for (const Function& f : functions) {
    names_bytes += f.info.name.size();
    code_bytes += f.code.size() * format::kInsnBytes;
  }
  const std::uint64_t total = format::kHeaderBytes + functions.size() * format::kEntryBytes +
                              names_bytes + code_bytes;
  if (total > kMaxBinaryBytes) {
    throw Error{"the binary would be " + std::to_string(total) + " bytes, more than the limit of " +
                std::to_string(kMaxBinaryBytes)};
  }

  std::vector<std::byte> out;
  out.reserve(total);
  for (char c : format::kMagic) out.push_back(static_cast<std::byte>(c));
  format::write_u16(out, format::kVersion);
  format::write_u16(out, 0);
  format::write_u32(out, static_cast<std::uint32_t>(functions.size()));
  format::write_u32(out, static_cast<std::uint32_t>(names_bytes));
  format::write_u32(out, static_cast<std::uint32_t>(code_bytes));
  std::uint32_t name_offset = 0, code_offset = 0;
  for (const Function& f : functions) {
    const auto code_length = static_cast<std::uint32_t>(f.code.size() * format::kInsnBytes);
    format::write_u32(out, name_offset);
    format::write_u32(out, static_cast<std::uint32_t>(f.info.name.size()));
    format::write_u32(out, f.info.n_params);
    format::write_u32(out, f.info.buffer_mask);
    format::write_u32(out, f.info.scratch_bytes);
    format::write_u32(out, code_offset);
    format::write_u32(out, code_length);
    name_offset += static_cast<std::uint32_t>(f.info.name.size());
    code_offset += code_length;
  }
  for (const Function& f : functions) {
    for (char c : f.info.name) out.push_back(static_cast<std::byte>(c));
  }
  for (const Function& f : functions) {
    for (const Encoded& e : f.code) {
      out.push_back(static_cast<std::byte>(e.op));
      out.push_back(static_cast<std::byte>(e.a));
      out.push_back(static_cast<std::byte>(e.b));
      out.push_back(static_cast<std::byte>(e.c));
      format::write_u32(out, e.imm);
    }
  }
  return out;
}

}  // namespace rig::program::assembly
