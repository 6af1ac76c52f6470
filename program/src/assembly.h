// The assembler's parts that stand apart from its pass over the lines (assembler.cc): what a
// function becomes, the words of an operand, and the binary's layout. Internal to rig_program.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rig/program/program.h"

namespace rig::program::assembly {

// Thrown inside the assembler only, caught by assemble(); carries the reason without the line.
struct Error {
  std::string reason;
};

struct Encoded {
  std::uint8_t op = 0, a = 0, b = 0, c = 0;
  std::uint32_t imm = 0;
};

struct LabelUse {
  std::size_t insn;
  std::string label;
  int line;
};

struct Function {
  FunctionInfo info;
  int line = 0;                 // of `func`
  std::vector<Encoded> code;
  std::vector<int> code_lines;  // source line of each instruction
  std::map<std::string, std::pair<std::size_t, int>, std::less<>> labels;  // -> insn, line
  std::vector<LabelUse> uses;
};

std::string_view trim(std::string_view s);
std::string quoted(std::string_view s);
// 1..kMaxNameBytes letters, digits, '_', '.' or '-'.
bool is_name(std::string_view s);
// A number, decimal or 0x-hexadecimal; nullopt if `s` is none. Values past 64 bits saturate.
std::optional<std::uint64_t> parse_number(std::string_view s);
// An unsigned number up to `max`; `what` names it in the error (throws Error).
std::uint64_t parse_unsigned(std::string_view s, std::uint64_t max, std::string_view what);
// A 32-bit immediate: 0..4294967295, or -2147483648..-1 as its two's complement (throws Error).
std::uint32_t parse_immediate(std::string_view s);
bool looks_like_register(std::string_view s);

// The binary of `functions` (FORMAT.md's layout), or Error past kMaxBinaryBytes.
std::vector<std::byte> lay_out(const std::vector<Function>& functions);

}  // namespace rig::program::assembly
