#include "format.h"

#include <cassert>

namespace rig::program::format {
namespace {

constexpr OpInfo kOps[] = {
    {Op::kRet, "ret", Form::kNone},
    {Op::kConst, "const", Form::kRegImm},
    {Op::kMov, "mov", Form::kRegReg},
    {Op::kParam, "param", Form::kRegParam},

    {Op::kAdd, "add", Form::kAlu},
    {Op::kSub, "sub", Form::kAlu},
    {Op::kMul, "mul", Form::kAlu},
    {Op::kDivu, "divu", Form::kAlu},
    {Op::kRemu, "remu", Form::kAlu},
    {Op::kAnd, "and", Form::kAlu},
    {Op::kOr, "or", Form::kAlu},
    {Op::kXor, "xor", Form::kAlu},
    {Op::kShl, "shl", Form::kAlu},
    {Op::kShr, "shr", Form::kAlu},
    {Op::kSar, "sar", Form::kAlu},

    {Op::kAddI, "addi", Form::kAluImm},
    {Op::kSubI, "subi", Form::kAluImm},
    {Op::kMulI, "muli", Form::kAluImm},
    {Op::kDivuI, "divui", Form::kAluImm},
    {Op::kRemuI, "remui", Form::kAluImm},
    {Op::kAndI, "andi", Form::kAluImm},
    {Op::kOrI, "ori", Form::kAluImm},
    {Op::kXorI, "xori", Form::kAluImm},
    {Op::kShlI, "shli", Form::kAluImm},
    {Op::kShrI, "shri", Form::kAluImm},
    {Op::kSarI, "sari", Form::kAluImm},

    {Op::kJmp, "jmp", Form::kJump},
    {Op::kBeq, "beq", Form::kBranch},
    {Op::kBne, "bne", Form::kBranch},
    {Op::kBltu, "bltu", Form::kBranch},
    {Op::kBgeu, "bgeu", Form::kBranch},
    {Op::kBlt, "blt", Form::kBranch},
    {Op::kBge, "bge", Form::kBranch},

    {Op::kLd, "ld", Form::kMemory},
    {Op::kSt, "st", Form::kMemory},
    {Op::kLdb, "ldb", Form::kMemory},
    {Op::kStb, "stb", Form::kMemory},
    {Op::kSize, "size", Form::kSize},
    {Op::kSizeb, "sizeb", Form::kSize},
};

}  // namespace

std::span<const OpInfo> ops() { return kOps; }

std::optional<OpInfo> op_info(std::uint8_t byte) {
  for (const OpInfo& info : kOps) {
    if (static_cast<std::uint8_t>(info.op) == byte) return info;
  }
  return std::nullopt;
}

std::optional<OpInfo> op_by_mnemonic(std::string_view mnemonic) {
  for (const OpInfo& info : kOps) {
    if (info.mnemonic == mnemonic) return info;
  }
  return std::nullopt;
}

bool is_name_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.' || c == '-';
}

std::uint16_t read_u16(std::span<const std::byte> bytes, std::size_t offset) {
  assert(offset + 2 <= bytes.size());
  return static_cast<std::uint16_t>(std::to_integer<std::uint16_t>(bytes[offset]) |
                                    (std::to_integer<std::uint16_t>(bytes[offset + 1]) << 8));
}

std::uint32_t read_u32(std::span<const std::byte> bytes, std::size_t offset) {
  assert(offset + 4 <= bytes.size());
  return std::to_integer<std::uint32_t>(bytes[offset]) |
         (std::to_integer<std::uint32_t>(bytes[offset + 1]) << 8) |
         (std::to_integer<std::uint32_t>(bytes[offset + 2]) << 16) |
         (std::to_integer<std::uint32_t>(bytes[offset + 3]) << 24);
}

void write_u16(std::vector<std::byte>& out, std::uint16_t value) {
  out.push_back(static_cast<std::byte>(value & 0xFF));
  out.push_back(static_cast<std::byte>(value >> 8));
}

void write_u32(std::vector<std::byte>& out, std::uint32_t value) {
  for (int shift = 0; shift < 32; shift += 8) {
    out.push_back(static_cast<std::byte>((value >> shift) & 0xFF));
  }
}

}  // namespace rig::program::format
